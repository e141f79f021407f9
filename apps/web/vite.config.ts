// Vite config of the web IDE: React, a dev proxy to the server, and the production build in dist/.
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/** Where the dev server forwards /api and /socket.io; the server's default address. */
const serverUrl = process.env.GADGET_SERVER_URL ?? "http://127.0.0.1:3000";

export default defineConfig({
  plugins: [react()],
  server: {
    host: "127.0.0.1",
    port: 5173,
    proxy: {
      "/api": { target: serverUrl, changeOrigin: true },
      "/socket.io": { target: serverUrl, changeOrigin: true, ws: true },
    },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: true,
    // The editor chunk is large by design and lazy; warn only for the rest.
    chunkSizeWarningLimit: 1200,
  },
});
