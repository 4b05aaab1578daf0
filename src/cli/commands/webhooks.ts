import type { Command } from "commander";
import { Context } from "../context";

/** `dqs webhook-secret`: the secret completion webhooks are signed with. */
export function webhookCommands(program: Command): void {
  program
    .command("webhook-secret")
    .description(
      "print the secret your completion webhooks (dqs query --callback) are signed with; --rotate replaces it (experimental)",
    )
    .option("--rotate", "replace the secret; webhooks carry the old one's signature for a day more")
    .action(async (options: { rotate?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const client = await ctx.client();
      const secret = options.rotate ? await client.rotateWebhookSecret() : await client.webhookSecret();
      await ctx.print({ Secret: secret }, () => `${secret}\n`);
      if (options.rotate && !ctx.json)
        await ctx.note("Rotated: for 24 hours webhooks are signed with the old secret too.");
    });
}
