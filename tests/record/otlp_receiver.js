// otlp_receiver.js MODE PORTFILE OUTFILE: an OTLP/HTTP collector on loopback
// for needle record --otlp-endpoint's tests (tests/record/test_otlp_stream.sh).
//   ok     each POST is decoded by OpenTelemetry's own generated code
//          (@opentelemetry/otlp-transformer, under OTEL_MODULES); its spans go
//          to OUTFILE, a JSON line each; the answer is 200 with an empty
//          ExportTraceServiceResponse
//   stall  takes the connection and never reads from it nor answers
//   reject answers 400 to every request
//   sink   answers 200 without decoding (make bench: the stream's cost)
// The port it listens on is written to PORTFILE once it does.
const fs = require('fs');
const http = require('http');
const net = require('net');
const path = require('path');
const [mode, portFile, outFile] = process.argv.slice(2);

function listening(server) {
  server.listen(0, '127.0.0.1', () => fs.writeFileSync(portFile, String(server.address().port)));
}

if (mode === 'stall') {
  const held = [];
  listening(net.createServer((sock) => { sock.pause(); held.push(sock); }));
} else {
  const Req = mode !== 'ok' ? null : require(path.join(process.env.OTEL_MODULES,
    '@opentelemetry/otlp-transformer/build/src/generated/root.js'))
    .opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  const hex = (a) => Buffer.from(a).toString('hex');
  listening(http.createServer((req, res) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      if (mode === 'reject' || mode === 'sink') {
        res.writeHead(mode === 'sink' ? 200 : 400, { 'Content-Length': 0 });
        res.end();
        return;
      }
      const msg = Req.toObject(Req.decode(Buffer.concat(parts)), { longs: String, bytes: Array, defaults: true });
      const lines = [];
      for (const rs of msg.resourceSpans) {
        const resource = {};
        for (const a of rs.resource.attributes) resource[a.key] = a.value.stringValue || a.value.intValue;
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) {
            const attrs = {};
            for (const a of s.attributes) attrs[a.key] = a.value.stringValue || a.value.intValue;
            lines.push(JSON.stringify({
              path: req.url, type: req.headers['content-type'], service: resource['service.name'],
              name: s.name, traceId: hex(s.traceId), spanId: hex(s.spanId),
              parentSpanId: s.parentSpanId && s.parentSpanId.length ? hex(s.parentSpanId) : '',
              start: s.startTimeUnixNano, end: s.endTimeUnixNano, tid: attrs['thread.id'],
            }));
          }
      }
      if (lines.length) fs.appendFileSync(outFile, lines.join('\n') + '\n');
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf', 'Content-Length': 0 });
      res.end();
    });
  }));
}
process.on('SIGTERM', () => process.exit(0));
