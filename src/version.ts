/** lastgood's version: the CLI's --version, the image tag `install --registry` derives. Equal to package.json's (test/package.test.ts). */
export const VERSION = '0.1.0';
