// The parts of tar-stream 2.x this project uses (the package ships no types).
declare module 'tar-stream' {
  import type { Readable, Writable } from 'node:stream';
  export interface Headers {
    name: string;
    size?: number;
    mode?: number;
    mtime?: Date;
    type?: string;
    linkname?: string | null;
    pax?: Record<string, string> | null;
  }
  export interface Extract extends Writable {
    on(event: 'entry', listener: (header: Headers, stream: Readable, next: (err?: Error) => void) => void): this;
    on(event: 'finish' | 'close', listener: () => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
  }
  export function extract(opts?: { allowUnknownFormat?: boolean }): Extract;
}
