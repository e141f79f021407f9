// Turns off zod's eval probe before any schema is built (importing @gadget/protocol builds them):
// under the server's CSP (script-src 'self') its `new Function("")` check is refused, and Chromium
// reports that as a policy violation even though zod then validates without eval anyway.
import { config } from "zod";

config({ jitless: true });
