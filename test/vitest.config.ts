import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { exportJWK, generateKeyPair } from "jose";
import { defineConfig } from "vitest/config";

// Tests run in workerd with the wrangler.toml bindings, in development mode,
// with a signing key made for this run (nothing secret is committed).
export default defineConfig(async () => {
  const migrations = await readD1Migrations("migrations");
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const signingKeys = JSON.stringify([{ ...(await exportJWK(privateKey)), kid: "test-key-1", alg: "ES256" }]);
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            ENVIRONMENT: "development",
            PUBLIC_URL: "http://dqs.test",
            SIGNING_KEYS: signingKeys,
            OIDC_CLIENT_SECRET: "",
          },
        },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      exclude: ["test/e2e/**"],
      setupFiles: ["test/support/apply-migrations.ts"],
    },
  };
});
