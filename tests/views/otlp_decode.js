// otlp_decode.js FILE: an OTLP ExportTraceServiceRequest (protobuf), decoded by
// OpenTelemetry's own generated code (@opentelemetry/otlp-transformer, installed
// by tests/views/test_export_otlp.sh into the build folder), as JSON on stdout.
const fs = require('fs');
const path = require('path');
const root = require(path.join(process.env.OTEL_MODULES, '@opentelemetry/otlp-transformer/build/src/generated/root.js'));
const T = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const msg = T.decode(fs.readFileSync(process.argv[2]));
const obj = T.toObject(msg, { longs: String, bytes: Array, defaults: true });
const hex = (a) => Buffer.from(a).toString('hex');
for (const rs of obj.resourceSpans)
  for (const ss of rs.scopeSpans)
    for (const s of ss.spans) {
      s.traceId = hex(s.traceId); s.spanId = hex(s.spanId);
      s.parentSpanId = s.parentSpanId && s.parentSpanId.length ? hex(s.parentSpanId) : '';
    }
console.log(JSON.stringify(obj));
