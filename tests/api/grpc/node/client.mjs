// Calls bzrk's ExecuteQuery with @grpc/grpc-js, protos loaded the way the official Berserk
// Node client loads them (keepCase, longs as String, enums as Number, defaults, oneofs), and
// prints {frames, status} as JSON for the Python test to check.
//
// usage: node client.mjs '{"target": "127.0.0.1:9510", "protoDir": "...", "query": "...",
//   "database": "default", "token": "...", "prefix": "/api/grpc", "cancelAfter": 3,
//   "cancelAfterMs": 2000,
//   "timeoutMs": 60000, "extra": {...}}'
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import path from "node:path";

const args = JSON.parse(process.argv[2]);
const packageDefinition = protoLoader.loadSync(
  [path.join(args.protoDir, "query.proto"), path.join(args.protoDir, "dynamic_value.proto")],
  { keepCase: true, longs: String, enums: Number, defaults: true, oneofs: true },
);
const proto = grpc.loadPackageDefinition(packageDefinition);
let QueryService = proto.query.QueryService;
if (args.prefix) {
  // Through the gateway every method path gets the /api/grpc prefix.
  const service = {};
  for (const [name, method] of Object.entries(QueryService.service)) {
    service[name] = { ...method, path: args.prefix + method.path };
  }
  QueryService = grpc.makeGenericClientConstructor(service, "QueryService");
}
const client = new QueryService(args.target, grpc.credentials.createInsecure());
const metadata = new grpc.Metadata();
if (args.token) metadata.set("authorization", `Bearer ${args.token}`);
metadata.set("x-bzrk-client-name", "bzrk-node-test");
const request = { query: args.query, since: args.since || "", until: "", timezone: "UTC" };
if (args.database) request.database = { name: args.database };
Object.assign(request, args.extra || {});

const frames = [];
let finished = false;
const call = client.ExecuteQuery(request, metadata, {
  deadline: new Date(Date.now() + (args.timeoutMs || 60000)),
});
call.on("data", (frame) => {
  if (!args.countOnly) frames.push(frame);
  else frames.push({ payload: frame.payload });
  if (args.cancelAfter && frames.length === args.cancelAfter) call.cancel();
});
if (args.cancelAfterMs) setTimeout(() => call.cancel(), args.cancelAfterMs);
call.on("error", () => {}); // the status event below carries it
call.on("status", (status) => {
  if (finished) return;
  finished = true;
  setImmediate(() => {
    process.stdout.write(
      JSON.stringify({ frames, status: { code: status.code, details: status.details } }),
    );
    client.close();
    process.exit(0);
  });
});
