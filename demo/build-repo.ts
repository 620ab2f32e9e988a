import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { buildDemoRepo } from '../src/demo/index.ts';

export { buildDemoRepo };

// `node demo/build-repo.ts [DIR]`: the repository alone (default .demo/gitops); `lastgood demo DIR` writes it with its config and cluster
if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = path.resolve(process.argv[2] ?? '.demo/gitops');
  const shas = await buildDemoRepo(dir);
  for (const sha of [...shas].reverse()) {
    const { commit } = await git.readCommit({ fs, dir, oid: sha });
    process.stdout.write(`${sha.slice(0, 12)}  ${commit.message.split('\n')[0]}\n`);
  }
}
