import { createRequire } from 'node:module';
import fc from 'fast-check';
import tar from 'tar-stream';
import { describe, expect, it } from 'vitest';

const ARCHIVE_OWNER = 0;
import { paxPathRecord, ustarHeader, type TarHeaderFields } from '../../src/archive/tar-header.js';

/**
 * The archive's own ustar/pax header encoder (src/archive/tar-header.ts).
 *
 * Invariants:
 * - byte-identical to the encoder of tar-stream 2 that wrote the archives before it (its internal headers.js,
 *   loaded here as the reference only): same header, same null for a name ustar cannot hold, same pax record;
 * - what it writes, tar-stream's public extract() reads back: name (through the pax record when ustar cannot
 *   hold it), size, mode, mtime and the file's bytes.
 */
const reference = createRequire(import.meta.url)('tar-stream/headers.js') as {
  encode(h: TarHeaderFields & { uid: number; gid: number }): Buffer | null;
  encodePax(o: { name: string }): Buffer;
};

const segment = fc.string({ unit: fc.constantFrom('a', 'Z', '0', '.', '-', '_', ' ', 'é', '中', '😀'), maxLength: 60 });
const names = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 120 }),
  fc.array(segment, { minLength: 1, maxLength: 8 }).map((parts) => parts.join('/')),
  fc
    .array(fc.string({ unit: fc.constantFrom('a', 'b'), minLength: 1, maxLength: 90 }), { maxLength: 6 })
    .map((p) => p.join('/')),
);
const fields = fc.record({
  name: names,
  size: fc.oneof(fc.nat(), fc.integer({ min: 0, max: 2 ** 36 })),
  mode: fc.nat({ max: 0o177777 }),
  mtime: fc.integer({ min: 0, max: 2 ** 33 * 1000 }).map((ms) => new Date(ms)),
  type: fc.constantFrom('file' as const, 'pax-header' as const),
});

function tarOf(entries: { name: string; data: Buffer; mode: number; mtime: Date }[]): Buffer {
  const out: Buffer[] = [];
  const pad = (n: number) => out.push(Buffer.alloc((512 - (n % 512)) % 512));
  for (const e of entries) {
    const h = { name: e.name, size: e.data.length, mode: e.mode, mtime: e.mtime, type: 'file' as const };
    const plain = ustarHeader(h);
    if (plain) out.push(plain);
    else {
      const pax = paxPathRecord(e.name);
      out.push(ustarHeader({ ...h, name: 'PaxHeader', size: pax.length, type: 'pax-header' })!, pax);
      pad(pax.length);
      out.push(ustarHeader({ ...h, name: 'fallback' })!);
    }
    out.push(e.data);
    pad(e.data.length);
  }
  out.push(Buffer.alloc(1024));
  return Buffer.concat(out);
}

function extracted(b: Buffer): Promise<{ name: string; size?: number; mode?: number; mtime?: Date; data: Buffer }[]> {
  return new Promise((resolve, reject) => {
    const got: { name: string; size?: number; mode?: number; mtime?: Date; data: Buffer }[] = [];
    const x = tar.extract();
    x.on('entry', (h, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        got.push({ name: h.name, size: h.size, mode: h.mode, mtime: h.mtime, data: Buffer.concat(chunks) });
        next();
      });
    });
    x.on('finish', () => resolve(got));
    x.on('error', reject);
    x.end(b);
  });
}

describe('the ustar/pax header encoder', () => {
  it('property: the same bytes as tar-stream 2 wrote, header and pax record, null alike', () => {
    let plain = 0;
    let refused = 0;
    fc.assert(
      fc.property(fields, (h) => {
        const mine = ustarHeader(h);
        // The archive writes owner 0:0 (a tar field, not a process's uid).
        const theirs = reference.encode({ ...h, uid: ARCHIVE_OWNER, gid: ARCHIVE_OWNER });
        expect(mine === null ? null : mine.toString('hex')).toBe(theirs === null ? null : theirs.toString('hex'));
        if (mine) plain++;
        else refused++;
        // The writer asks for a pax record only for a name ustar cannot hold, never an empty one.
        if (h.name !== '')
          expect(paxPathRecord(h.name).toString('hex')).toBe(reference.encodePax({ name: h.name }).toString('hex'));
      }),
      { numRuns: 2000, seed: 2911 },
    );
    // Both sides of the null were met often.
    expect(plain).toBeGreaterThan(200);
    expect(refused).toBeGreaterThan(200);
  });

  it('pax record lengths at the digit boundaries count their own digits', () => {
    for (const n of [1, 2, 3, 90, 91, 92, 93, 94, 95, 96, 990, 991, 992, 993, 994, 995, 996, 9989, 9990, 9991]) {
      const r = paxPathRecord('x'.repeat(n)).toString();
      const len = Number(r.slice(0, r.indexOf(' ')));
      expect(Buffer.byteLength(r), `name of ${n}`).toBe(len);
    }
  });

  it("property: tar-stream's public extract() reads back name, size, mode, mtime and the bytes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            name: names.filter((n) => n.length > 0 && !n.includes('\0')),
            data: fc.uint8Array({ maxLength: 1500 }).map((a) => Buffer.from(a)),
            mode: fc.nat({ max: 0o7777 }),
            // Seconds as a 32-bit integer, as tar-stream wrote them (a date past 2038 is not read back).
            mtime: fc.integer({ min: 0, max: 2 ** 31 - 1 }).map((s) => new Date(s * 1000)),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        async (entries) => {
          const got = await extracted(tarOf(entries));
          expect(got.map((g) => g.name)).toEqual(entries.map((e) => e.name));
          for (const [i, e] of entries.entries()) {
            expect(got[i]!.size).toBe(e.data.length);
            expect(got[i]!.mode).toBe(e.mode);
            expect(got[i]!.mtime!.getTime()).toBe(e.mtime.getTime());
            expect(got[i]!.data.equals(e.data)).toBe(true);
          }
        },
      ),
      { numRuns: 200, seed: 2912 },
    );
  });
});
