// The bundle-size baseline: React and ReactDOM rendering one line, nothing else.
import { createRoot } from "react-dom/client";

createRoot(document.getElementById("root")!).render(<p>Hello</p>);
