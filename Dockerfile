# lastgood — the controller image (the whole CLI: `lastgood controller` by default).
# It is the npm package, as published: the same bundle (dist/cli/), templates and licences, and
# nothing else — the package has no dependencies to install. Build it from the package:
#   npm pack                  # lastgood-0.1.0.tgz from this checkout (or: npm pack lastgood@0.1.0)
#   docker build -t <registry>/lastgood:0.1.0 .
# Run in a cluster: lastgood install --config lastgood.yaml --registry <registry>
#
# The base is pinned by digest (the multi-platform index of node:24-slim; renew it with the tag).
FROM node:24-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6
ARG PACKAGE=lastgood-0.1.0.tgz
COPY ${PACKAGE} /tmp/lastgood.tgz
# root owns the files, everyone may read them; the process runs as another user and writes only
# to its volumes (the manifests mount /tmp and /var/lib/lastgood on a read-only root filesystem)
RUN mkdir /app && tar -xzf /tmp/lastgood.tgz -C /app --strip-components=1 --no-same-owner && rm /tmp/lastgood.tgz
ENV NODE_ENV=production
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "/app/bin/lastgood.js"]
CMD ["controller", "--config", "/etc/lastgood/lastgood.yaml"]
