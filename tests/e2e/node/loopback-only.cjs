// Preloaded with `node --require` by mcp-center's end-to-end tests: force every listening
// socket of a test server onto 127.0.0.1, so a server that calls `listen(port)` (all
// interfaces) stays on loopback.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    const port = Number(args[0]);
    const rest = args.slice(1).filter((a) => typeof a === "function");
    return listen.call(this, { port, host: "127.0.0.1" }, ...rest);
  }
  if (args[0] && typeof args[0] === "object" && !("path" in args[0])) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
