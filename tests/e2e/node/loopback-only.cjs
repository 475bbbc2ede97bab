// Preloaded with `node --require` by mcp-center's end-to-end tests: force every listening
// socket of a test server onto 127.0.0.1, so a server that calls `listen(port)` (all
// interfaces) stays on loopback. Started with PORT=0 the OS picks the port; when
// MCP_CENTER_TEST_PORT_FILE is set, the port actually bound is written there (whole, by a
// rename) once the server listens, so tests running side by side never race for a port.
"use strict";
const fs = require("node:fs");
const net = require("node:net");
const listen = net.Server.prototype.listen;
const portFile = process.env.MCP_CENTER_TEST_PORT_FILE;
net.Server.prototype.listen = function (...args) {
  if (portFile) {
    this.once("listening", () => {
      const address = this.address();
      if (address && typeof address === "object") {
        fs.writeFileSync(`${portFile}.tmp`, String(address.port));
        fs.renameSync(`${portFile}.tmp`, portFile);
      }
    });
  }
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
