import { createHash, createPrivateKey, createPublicKey, sign as cryptoSign, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { ConfigError } from '../../errors.ts';
import { MAX_SECRET_FILE_BYTES, readTextWithin } from '../../read-within.ts';
import type { Person } from '../../repo/types.ts';

/**
 * Commit signing with an SSH key from a file, through isomorphic-git's `onSign` hook: the
 * signature is an SSHSIG (OpenSSH's PROTOCOL.sshsig, namespace "git") in the commit's `gpgsig`
 * header, which `git verify-commit` checks with `gpg.format=ssh` and an allowed-signers file, and
 * GitLab, Gitea and GitHub show as verified for a key registered to the committer.
 * Keys: an unencrypted OpenSSH ed25519 key (`ssh-keygen -t ed25519`), or a PKCS#8 PEM ed25519 or
 * RSA key (RSA signs with rsa-sha2-512). No `ssh-keygen` or `git` binary is needed.
 */

export interface SigningConfig {
  format: 'ssh';
  keyFile: string;
}

export interface CommitToSign {
  gitdir: string;
  tree: string;
  parents: string[];
  message: string;
  author: Person;
  committer: Person;
}

export interface CommitSigner {
  /** Writes the signed commit into `gitdir`; its oid. */
  sign(commit: CommitToSign): Promise<string>;
}

class SshReader {
  private at = 0;
  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  u32(): number {
    const v = this.buf.readUInt32BE(this.at);
    this.at += 4;
    return v;
  }
  bytes(): Buffer {
    const n = this.u32();
    const out = this.buf.subarray(this.at, this.at + n);
    if (out.length !== n) throw new Error('truncated key');
    this.at += n;
    return out;
  }
  text(): string {
    return this.bytes().toString('utf8');
  }
}

const sshString = (b: Buffer | string) => {
  const data = typeof b === 'string' ? Buffer.from(b) : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  return Buffer.concat([len, data]);
};

/** An SSH mpint: big-endian, a leading zero when the top bit is set. */
const mpint = (b: Buffer) => sshString(b[0]! & 0x80 ? Buffer.concat([Buffer.alloc(1), b]) : b);

interface SshKey {
  privateKey: KeyObject;
  /** the public key in SSH wire format */
  publicBlob: Buffer;
  /** the SSH signature algorithm name */
  algorithm: 'ssh-ed25519' | 'rsa-sha2-512';
}

/** Reads an OpenSSH ("-----BEGIN OPENSSH PRIVATE KEY-----") or PKCS#8 PEM private key. */
export function readSshKey(text: string, file: string): SshKey {
  const openssh = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]+?)-----END OPENSSH PRIVATE KEY-----/.exec(text);
  if (openssh) {
    const buf = Buffer.from(openssh[1]!.replace(/\s+/g, ''), 'base64');
    const magic = 'openssh-key-v1\0';
    if (buf.toString('latin1', 0, magic.length) !== magic) throw new ConfigError(`repo.signing.keyFile ${file}: not an OpenSSH private key`);
    const r = new SshReader(buf.subarray(magic.length));
    const cipher = r.text();
    r.text(); // kdf name
    r.bytes(); // kdf options
    if (cipher !== 'none') throw new ConfigError(`repo.signing.keyFile ${file}: the key is encrypted with a passphrase; give an unencrypted key (a mounted secret)`);
    if (r.u32() !== 1) throw new ConfigError(`repo.signing.keyFile ${file}: one key per file`);
    r.bytes(); // public key
    const priv = new SshReader(r.bytes());
    if (priv.u32() !== priv.u32()) throw new ConfigError(`repo.signing.keyFile ${file}: corrupt key (check bytes differ)`);
    const type = priv.text();
    if (type !== 'ssh-ed25519') throw new ConfigError(`repo.signing.keyFile ${file}: OpenSSH ${type} keys are not supported; use ed25519, or convert the key to PKCS#8 PEM (ssh-keygen -p -m PKCS8 -f KEY)`);
    const pub = priv.bytes();
    const secret = priv.bytes();
    const privateKey = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: secret.subarray(0, 32).toString('base64url'), x: pub.toString('base64url') }, format: 'jwk' });
    return { privateKey, publicBlob: Buffer.concat([sshString('ssh-ed25519'), sshString(pub)]), algorithm: 'ssh-ed25519' };
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(text);
  } catch (error) {
    throw new ConfigError(`repo.signing.keyFile ${file}: not a private key lastgood can read (an unencrypted OpenSSH ed25519 key, or PKCS#8 PEM)`, { cause: error });
  }
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  if (privateKey.asymmetricKeyType === 'ed25519') {
    return { privateKey, publicBlob: Buffer.concat([sshString('ssh-ed25519'), sshString(Buffer.from(jwk.x!, 'base64url'))]), algorithm: 'ssh-ed25519' };
  }
  if (privateKey.asymmetricKeyType === 'rsa') {
    return { privateKey, publicBlob: Buffer.concat([sshString('ssh-rsa'), mpint(Buffer.from(jwk.e!, 'base64url')), mpint(Buffer.from(jwk.n!, 'base64url'))]), algorithm: 'rsa-sha2-512' };
  }
  throw new ConfigError(`repo.signing.keyFile ${file}: ${privateKey.asymmetricKeyType} keys are not supported (ed25519 or RSA)`);
}

/** An armored SSHSIG over `payload` in namespace "git". */
export function sshSignature(key: SshKey, payload: string): string {
  const namespace = 'git';
  const hashAlgorithm = 'sha512';
  const digest = createHash('sha512').update(payload).digest();
  const signed = Buffer.concat([Buffer.from('SSHSIG'), sshString(namespace), sshString(''), sshString(hashAlgorithm), sshString(digest)]);
  const raw = key.algorithm === 'ssh-ed25519' ? cryptoSign(null, signed, key.privateKey) : cryptoSign('sha512', signed, key.privateKey);
  const version = Buffer.alloc(4);
  version.writeUInt32BE(1);
  const blob = Buffer.concat([Buffer.from('SSHSIG'), version, sshString(key.publicBlob), sshString(namespace), sshString(''), sshString(hashAlgorithm), sshString(Buffer.concat([sshString(key.algorithm), sshString(raw)]))]);
  const lines = blob.toString('base64').match(/.{1,70}/g) ?? [];
  return `-----BEGIN SSH SIGNATURE-----\n${lines.join('\n')}\n-----END SSH SIGNATURE-----\n`;
}

/** The signer repo.signing describes; the key is read once, now, so a bad key fails at start. */
export function loadSigner(cfg: SigningConfig, where: { relativeTo: string; configFile?: string }): CommitSigner {
  const file = path.resolve(where.relativeTo, cfg.keyFile);
  let read: string | undefined;
  try {
    read = readTextWithin(file, MAX_SECRET_FILE_BYTES);
  } catch (error) {
    throw new ConfigError(`repo.signing.keyFile: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, { ...(where.configFile ? { file: where.configFile } : {}), cause: error });
  }
  if (read === undefined) throw new ConfigError(`repo.signing.keyFile: ${file} holds more than ${MAX_SECRET_FILE_BYTES >> 10} KiB, the most lastgood reads as a key (is it the right file?)`, where.configFile ? { file: where.configFile } : {});
  const text = read;
  const key = readSshKey(text, file);
  return {
    async sign(c) {
      return git.commit({
        fs,
        gitdir: c.gitdir,
        tree: c.tree,
        parent: c.parents,
        message: c.message,
        author: c.author,
        committer: c.committer,
        noUpdateBranch: true,
        signingKey: 'ssh',
        onSign: async ({ payload }) => ({ signature: sshSignature(key, payload) }),
      });
    },
  };
}
