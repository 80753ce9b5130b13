import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LegacyDocParser, StreamedData } from '../../src/archive/legacy.js';

/** Parse text cut into pieces at the given points; the streamed strings' bytes by role. */
function parse(text: string, cuts: number[]): { doc: unknown; data: Map<string, Buffer> } {
  const data = new Map<string, Buffer[]>();
  const p = new LegacyDocParser((role) => {
    const parts: Buffer[] = [];
    data.set(role, parts);
    return { write: (b) => parts.push(Buffer.from(b)) };
  });
  const bytes = Buffer.from(text);
  let at = 0;
  for (const c of [...cuts.map((x) => x % (bytes.length + 1))].sort((a, b) => a - b)) {
    p.write(bytes.subarray(at, Math.max(at, c)));
    at = Math.max(at, c);
  }
  p.write(bytes.subarray(at));
  return { doc: p.end(), data: new Map([...data].map(([k, v]) => [k, Buffer.concat(v)])) };
}

describe('the streamed version-1 document parser', () => {
  it('builds what JSON.parse builds, for any JSON and any cut of its bytes', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 5, stringUnit: 'binary' }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (v, cuts) => {
          const text = JSON.stringify(v);
          expect(parse(text, cuts).doc).toEqual(JSON.parse(text));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('hands the two files to the sink, decoded, whatever the key order, escapes and cuts', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 3000 }),
        fc.uint8Array({ maxLength: 300 }),
        fc.boolean(),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 8 }),
        (jsonl, meta, metaFirst, escapeSlash, cuts) => {
          const b64 = (b: Uint8Array) => {
            const s = Buffer.from(b).toString('base64');
            return escapeSlash ? s.replace(/\//g, '\\/') : s;
          };
          const files = metaFirst
            ? `"meta":{"data_base64":"${b64(meta)}","name":"m"},"jsonl":{"name":"j","data_base64":"${b64(jsonl)}"}`
            : `"jsonl":{"name":"j","data_base64":"${b64(jsonl)}"},"meta":{"data_base64":"${b64(meta)}"}`;
          const text = `{"version":1,"files":{${files}},"seahorse":null}`;
          const { doc, data } = parse(text, cuts);
          expect(data.get('jsonl') ?? Buffer.alloc(0)).toEqual(Buffer.from(jsonl));
          expect(data.get('meta') ?? Buffer.alloc(0)).toEqual(Buffer.from(meta));
          const f = (doc as { files: Record<string, { data_base64: unknown }> }).files;
          expect(f.jsonl!.data_base64).toEqual(new StreamedData(jsonl.length));
          expect(f.meta!.data_base64).toEqual(new StreamedData(meta.length));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses what JSON.parse refuses', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (s) => {
        let ok = true;
        try {
          JSON.parse(s);
        } catch {
          ok = false;
        }
        if (ok) expect(parse(s, []).doc).toEqual(JSON.parse(s));
        else expect(() => parse(s, [])).toThrow();
      }),
      { numRuns: 2000 },
    );
    for (const bad of ['{"a":1,}', '[1,]', '{"a" 1}', '01', '"\u0001"', '{"a":1}x', '', '{', '"\\x"', 'tru'])
      expect(() => parse(bad, []), bad).toThrow();
  });
});
