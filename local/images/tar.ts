// A tar writer whose output depends on the entries alone: the same entries give the same bytes,
// so an image layer has the same digest on every machine (contract section 13: the same sources
// give the same digest). Callers give the entries sorted; owners are numbers (no user names),
// every mtime is the one given, and a name or link target too long for ustar goes in a PAX record
// (what GNU tar and Go's archive/tar read, and so containerd).
import { createHash, type Hash } from 'node:crypto';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';

export type TarEntry =
  | { type: 'dir'; path: string; mode: number; uid: number; gid: number }
  | { type: 'file'; path: string; mode: number; uid: number; gid: number; size: number; source: TarSource }
  | { type: 'symlink'; path: string; target: string; uid: number; gid: number }
  | { type: 'hardlink'; path: string; target: string; uid: number; gid: number };

/** A file's bytes: a file on disk (read in chunks), or bytes in memory. */
export type TarSource = { file: string } | { bytes: Buffer };

/** 1970-01-01: every entry's mtime (no clock in a layer). */
export const fixedMtime = 0;

const block = 512;

/** Writes bytes to a file descriptor while hashing them and counting them. */
export class HashingWriter {
  readonly hash: Hash = createHash('sha256');
  size = 0;
  constructor(private readonly fd: number) {}
  write(bytes: Buffer): void {
    this.hash.update(bytes);
    let offset = 0;
    while (offset < bytes.length) offset += writeSync(this.fd, bytes, offset);
    this.size += bytes.length;
  }
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  // The record's length counts its own decimal digits.
  let length = Buffer.byteLength(body) + 1;
  while (`${length}`.length + Buffer.byteLength(body) !== length) length += 1;
  return Buffer.from(`${length}${body}`);
}

interface Header {
  name: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  typeflag: string;
  linkname: string;
}

function header(h: Header): Buffer {
  const buffer = Buffer.alloc(block);
  const put = (text: string, offset: number, width: number) => buffer.write(text, offset, width, 'utf8');
  put(h.name, 0, 100);
  put(octal(h.mode & 0o7777, 8), 100, 8);
  put(octal(h.uid, 8), 108, 8);
  put(octal(h.gid, 8), 116, 8);
  put(octal(h.size, 12), 124, 12);
  put(octal(fixedMtime, 12), 136, 12);
  put('        ', 148, 8);
  put(h.typeflag, 156, 1);
  put(h.linkname, 157, 100);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  let sum = 0;
  for (const byte of buffer) sum += byte;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return buffer;
}

function padding(size: number): Buffer {
  return Buffer.alloc((block - (size % block)) % block);
}

function fits(text: string): boolean {
  return Buffer.byteLength(text) < 100 && /^[\x20-\x7e]*$/.test(text);
}

function writeHeader(out: HashingWriter, h: Header): void {
  const records: Buffer[] = [];
  let { name, linkname } = h;
  if (!fits(name)) {
    records.push(paxRecord('path', name));
    name = name.slice(-99).replace(/[^\x20-\x7e]/g, '_');
  }
  if (!fits(linkname)) {
    records.push(paxRecord('linkpath', linkname));
    linkname = linkname.slice(-99).replace(/[^\x20-\x7e]/g, '_');
  }
  if (records.length > 0) {
    const body = Buffer.concat(records);
    out.write(
      header({
        name: 'PaxHeader',
        mode: 0o644,
        uid: 0,
        gid: 0,
        size: body.length,
        typeflag: 'x',
        linkname: '',
      }),
    );
    out.write(body);
    out.write(padding(body.length));
  }
  out.write(header({ ...h, name, linkname }));
}

function copyFile(out: HashingWriter, path: string, size: number): void {
  const fd = openSync(path, 'r');
  try {
    const chunk = Buffer.alloc(1 << 20);
    let left = size;
    while (left > 0) {
      const read = readSync(fd, chunk, 0, Math.min(chunk.length, left), null);
      if (read === 0) throw new Error(`${path} is shorter than the ${size} bytes it had when listed`);
      out.write(chunk.subarray(0, read));
      left -= read;
    }
  } finally {
    closeSync(fd);
  }
}

/** Appends one entry (header, bytes, padding). */
export function writeEntry(out: HashingWriter, entry: TarEntry): void {
  const base = { uid: entry.uid, gid: entry.gid, linkname: '' };
  switch (entry.type) {
    case 'dir':
      writeHeader(out, { ...base, name: `${entry.path}/`, mode: entry.mode, size: 0, typeflag: '5' });
      return;
    case 'symlink':
      writeHeader(out, {
        ...base,
        name: entry.path,
        mode: 0o777,
        size: 0,
        typeflag: '2',
        linkname: entry.target,
      });
      return;
    case 'hardlink':
      writeHeader(out, {
        ...base,
        name: entry.path,
        mode: 0o644,
        size: 0,
        typeflag: '1',
        linkname: entry.target,
      });
      return;
    case 'file': {
      writeHeader(out, { ...base, name: entry.path, mode: entry.mode, size: entry.size, typeflag: '0' });
      if ('bytes' in entry.source) out.write(entry.source.bytes);
      else copyFile(out, entry.source.file, entry.size);
      out.write(padding(entry.size));
    }
  }
}

/** Writes a whole tar file; returns its sha256 (hex) and size. */
export function writeTar(file: string, entries: Iterable<TarEntry>): { sha256: string; size: number } {
  const fd = openSync(file, 'w');
  try {
    const out = new HashingWriter(fd);
    for (const entry of entries) writeEntry(out, entry);
    out.write(Buffer.alloc(block * 2));
    return { sha256: out.hash.digest('hex'), size: out.size };
  } finally {
    closeSync(fd);
  }
}
