# lastgood — the controller image (the whole CLI: `lastgood controller` by default).
# Node 24 runs the TypeScript sources as they are (type stripping): the image is the sources and
# the production dependencies; nothing is compiled. Build: docker build -t lastgood:0.1.0 .
# Run in a cluster: lastgood install --config lastgood.yaml --image <registry>/lastgood:0.1.0

FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# production dependencies only, and none of them needs an install script
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY templates ./templates
# any non-root uid works (the files are world-readable); the manifests run it as 65532 with a read-only root
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "/app/bin/lastgood.js"]
CMD ["controller", "--config", "/etc/lastgood/lastgood.yaml"]
