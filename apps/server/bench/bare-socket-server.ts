// Baseline for the memory benchmark: a bare Socket.IO server with two namespaces that accepts
// every connection and does nothing else. Prints its port as JSON.
import { createServer } from "node:http";
import { Server } from "socket.io";

const http = createServer();
const io = new Server(http, {
  maxHttpBufferSize: 16 * 1024 * 1024,
  pingInterval: 10_000,
  pingTimeout: 10_000,
});
io.of("/drones").on("connection", (socket) => {
  socket.join(`drone:${socket.id}`);
});
io.of("/ide").on("connection", (socket) => {
  socket.join(`user:${socket.id}`);
});
http.listen(0, "127.0.0.1", () => {
  const address = http.address();
  console.log(JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 }));
});
process.on("SIGTERM", () => {
  io.close();
  process.exit(0);
});
