# lastgood — the controller image (the whole CLI: `lastgood controller` by default).
# It is the npm package, as published: the same bundle (dist/cli/), templates and licences, and
# nothing else — the package has no dependencies to install. The package ships this file. Build
# the image from the package, in a clone or where the package is installed:
#   npm pack                  # lastgood-0.1.0.tgz from this checkout (or: npm pack lastgood@0.1.0)
#   docker build -t <registry>/lastgood:0.1.0 .
# or, with the package installed (npm install lastgood):
#   cd node_modules/lastgood && npm pack && docker build -t <registry>/lastgood:0.1.0 .
# Run in a cluster: lastgood install --config lastgood.yaml --registry <registry>
#
# The base is pinned by digest (the multi-platform index of node:24-slim; renew it with the tag).
FROM node:24-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6
ARG PACKAGE=lastgood-0.1.0.tgz
COPY ${PACKAGE} /tmp/lastgood.tgz
# root owns the files, everyone may read them; the process runs as another user and writes only
# to its volumes (the manifests mount /tmp and /var/lib/lastgood on a read-only root filesystem)
RUN mkdir /app && tar -xzf /tmp/lastgood.tgz -C /app --strip-components=1 --no-same-owner && rm /tmp/lastgood.tgz
# kustomize for the render check (docs/how-it-works.md "The render check (kustomize)"), so that a revert made
# in-cluster is rendered and checked as one made by the CLI. From the official image, pinned by
# digest; v5.8.1 is the kustomize Flux's kustomize-controller builds with, so the render of the
# last-known-good can reproduce the digest Flux records in status.history. The binary is static
# (CGO_ENABLED=0 in kustomize's kustomize.Dockerfile), at /app/kustomize in that image, and lands
# on the PATH, where the render check looks first (`lastgood version` prints what it found).
# The digest is the one public renovate-managed files pin for this tag; it was not checked against
# the registry where this line was written (no Docker engine or registry access there): a build
# that cannot pull it fails here. Renew the tag and the digest together.
COPY --from=registry.k8s.io/kustomize/kustomize:v5.8.1@sha256:899fcd3bc898160e62bcaf82932b0cb29ba38d16272353db2e7acbba82129429 /app/kustomize /usr/local/bin/kustomize
ENV NODE_ENV=production
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "/app/bin/lastgood.js"]
CMD ["controller", "--config", "/etc/lastgood/lastgood.yaml"]
