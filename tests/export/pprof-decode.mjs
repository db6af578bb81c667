// pprof-decode.mjs VIEWER_DIR FILE.pb.gz: decode a gzipped pprof profile with the
// npm package pprof-format (Datadog's pure-JavaScript decoder of
// profile.proto, installed in VIEWER_DIR/node_modules by scripts/deps) and print what it holds as JSON, for test_export.py:
//   sample_types [[type, unit]], default_sample_type, comments,
//   samples: [{stack: [frame names, root first, an inline chain outermost
//   first], lines: ["file:line" per frame], values: {type: n}}],
//   functions: [{name, system_name, filename}], mappings: [filename],
//   locations, string0 (string_table[0]).
// Exits 2 when the file is not gzip or not a Profile (a real decoder's
// verdict), with the reason on stderr.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';

const { Profile } = createRequire(resolve(process.argv[2]) + '/')('pprof-format');
const raw = readFileSync(process.argv[3]);
let p;
try {
  p = Profile.decode(gunzipSync(raw));
} catch (e) {
  console.error(`not a gzipped pprof profile: ${e.message}`);
  process.exit(2);
}
const S = (i) => {
  const s = p.stringTable.strings[Number(i)];
  if (s === undefined) throw new Error(`string index ${i} out of range`);
  return s;
};
const fn = new Map(p.function.map((f) => [Number(f.id), f]));
const loc = new Map(p.location.map((l) => [Number(l.id), l]));
const map = new Map(p.mapping.map((m) => [Number(m.id), m]));
const types = p.sampleType.map((t) => [S(t.type), S(t.unit)]);
const out = {
  string0: p.stringTable.strings[0],
  sample_types: types,
  default_sample_type: S(p.defaultSampleType),
  comments: p.comment.map(S),
  duration_nanos: Number(p.durationNanos),
  functions: p.function.map((f) => ({ name: S(f.name), system_name: S(f.systemName), filename: S(f.filename) })),
  mappings: p.mapping.map((m) => S(m.filename)),
  locations: p.location.length,
  samples: [],
};
for (const s of p.sample) {
  if (s.value.length !== types.length) throw new Error('sample with a wrong number of values');
  const stack = [], lines = [];
  // location_id[0] is the leaf; a location's lines are innermost first
  for (const id of [...s.locationId].reverse()) {
    const l = loc.get(Number(id));
    if (!l) throw new Error(`sample refers to missing location ${id}`);
    if (Number(l.mappingId) && !map.has(Number(l.mappingId))) throw new Error(`missing mapping ${l.mappingId}`);
    for (const ln of [...l.line].reverse()) {
      const f = fn.get(Number(ln.functionId));
      if (!f) throw new Error(`location refers to missing function ${ln.functionId}`);
      stack.push(S(f.name));
      lines.push(`${S(f.filename)}:${Number(ln.line)}`);
    }
  }
  const values = {};
  types.forEach(([t], i) => { values[t] = Number(s.value[i]); });
  out.samples.push({ stack, lines, values });
}
console.log(JSON.stringify(out));
