import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { exportJWK, generateKeyPair } from "jose";
import { defineConfig } from "vitest/config";

// Two projects, one command:
// - "workers": tests inside workerd with the wrangler.toml bindings, in
//   development mode, with a signing key made for this run (nothing secret is
//   committed);
// - "e2e": Node tests that start `wrangler dev` as a user would and drive it
//   over HTTP and through headless Chromium.
export default defineConfig(async () => {
  const migrations = await readD1Migrations("migrations");
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const signingKeys = JSON.stringify([{ ...(await exportJWK(privateKey)), kid: "test-key-1", alg: "ES256" }]);
  return {
    test: {
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              main: "./test/support/test-worker.ts",
              miniflare: {
                // The engine Worker's consumers (wrangler.engine.toml) and the API's, served by the test Worker.
                queueConsumers: {
                  "dqs-queries": {
                    maxBatchSize: 1,
                    maxBatchTimeout: 0,
                    maxRetries: 3,
                    deadLetterQueue: "dqs-queries-dlq",
                  },
                  "dqs-queries-long": {
                    maxBatchSize: 1,
                    maxBatchTimeout: 0,
                    maxRetries: 3,
                    deadLetterQueue: "dqs-queries-dlq",
                  },
                  "dqs-queries-dlq": { maxBatchSize: 10, maxBatchTimeout: 1 },
                  "dqs-builds": {
                    maxBatchSize: 1,
                    maxBatchTimeout: 0,
                    maxRetries: 3,
                    deadLetterQueue: "dqs-builds-dlq",
                  },
                  "dqs-builds-dlq": { maxBatchSize: 10, maxBatchTimeout: 1 },
                  // The API Worker's own consumer (wrangler.toml).
                  "dqs-webhooks": { maxBatchSize: 10, maxBatchTimeout: 1, maxRetries: 10 },
                },
                // The table store Worker's objects (wrangler.store.toml), served by the test Worker too.
                durableObjects: { TABLE_STORE: { className: "TableStore", useSQLite: true } },
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  ENVIRONMENT: "development",
                  PUBLIC_URL: "http://dqs.test",
                  SIGNING_KEYS: signingKeys,
                  OIDC_CLIENT_SECRET: "",
                  // Uploads do not ask the local queue for column images, whose consumer would build them while a
                  // test looks; tests that want images turn this on with a queue they control (test/support/query.ts).
                  COLUMN_IMAGES: "off",
                  // Most tests submit many queries as one user and never finish some; the fair-share tests
                  // (test/query/user-queries.test.ts) set small limits of their own.
                  QUERY_MAX_RUNNING_PER_USER: "1000",
                  QUERY_MAX_QUEUED_PER_USER: "1000",
                },
              },
            }),
          ],
          test: {
            name: "workers",
            include: ["test/**/*.test.ts"],
            exclude: ["test/e2e/**"],
            setupFiles: ["test/support/apply-migrations.ts"],
            // A budget, not an assertion: some tests run millions of SQLite steps, which a busy machine slows past 5 s.
            testTimeout: 30_000,
          },
        },
        {
          test: {
            name: "e2e",
            include: ["test/e2e/**/*.e2e.ts"],
            environment: "node",
            globalSetup: ["test/e2e/support/global-scratch.ts"],
            testTimeout: 120_000,
            hookTimeout: 180_000,
          },
        },
      ],
    },
  };
});
