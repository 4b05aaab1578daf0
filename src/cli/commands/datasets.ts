import confirm from "@inquirer/confirm";
import { Option, type Command } from "commander";
import { Context, parseRef, UsageError } from "../context";
import { table } from "../output";

/** `dqs datasets` and `dqs dataset create|delete|grant|revoke`. */
export function datasetCommands(program: Command): void {
  program
    .command("datasets")
    .argument("[account]", "an account whose datasets you may see (default: your own)")
    .description("list datasets")
    .action(async (account: string | undefined, _: unknown, command: Command) => {
      const ctx = Context.of(command);
      const client = await ctx.client();
      const list = account ? await client.accountDatasets(account) : await client.myDatasets();
      await ctx.print(list, () =>
        list.length === 0
          ? "No datasets.\n"
          : table(
              ["ACCOUNT", "DATASET"],
              list.map((d) => [d.AccountName, d.DatasetName]),
            ),
      );
    });

  const dataset = program.command("dataset").description("create, delete and share datasets (experimental endpoints)");

  dataset
    .command("create")
    .argument("<account/dataset>")
    .description("create a dataset (or change the settings of one you own)")
    .addOption(new Option("--visibility <visibility>", "who may see it").choices(["private", "public"]))
    .option("--description <text>", "a description")
    .action(
      async (ref: string, options: { visibility?: "private" | "public"; description?: string }, command: Command) => {
        const ctx = Context.of(command);
        const [account, name] = parseRef(ref, 2);
        const client = await ctx.client();
        const result = await client.createDataset(account, name, {
          ...(options.visibility && { Visibility: options.visibility }),
          ...(options.description !== undefined && { Description: options.description }),
        });
        await ctx.print({ Created: result.created, Message: result.message }, () => `${result.message}.\n`);
      },
    );

  dataset
    .command("delete")
    .argument("<account/dataset>")
    .description("delete a dataset and all its data")
    .option("-y, --yes", "do not ask for confirmation")
    .action(async (ref: string, options: { yes?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const [account, name] = parseRef(ref, 2);
      await confirmOrRefuse(options.yes, `Delete dataset ${account}/${name} and all its data?`);
      const client = await ctx.client();
      const message = await client.deleteDataset(account, name);
      await ctx.print({ Message: message }, () => `${message}.\n`);
    });

  dataset
    .command("grant")
    .argument("<account/dataset>")
    .argument("<grantee>", "the account to share with")
    .description("let another account read (or write to) a dataset you own")
    .addOption(
      new Option("--permission <permission>", "what the grantee may do").choices(["read", "write"]).default("read"),
    )
    .action(async (ref: string, grantee: string, options: { permission: "read" | "write" }, command: Command) => {
      const ctx = Context.of(command);
      const [account, name] = parseRef(ref, 2);
      const client = await ctx.client();
      const message = await client.grant(account, name, grantee, options.permission);
      await ctx.print({ Message: message }, () => `${message}.\n`);
    });

  dataset
    .command("revoke")
    .argument("<account/dataset>")
    .argument("<grantee>")
    .description("take back an account's access to a dataset you own")
    .action(async (ref: string, grantee: string, _: unknown, command: Command) => {
      const ctx = Context.of(command);
      const [account, name] = parseRef(ref, 2);
      const client = await ctx.client();
      const message = await client.revoke(account, name, grantee);
      await ctx.print({ Message: message }, () => `${message}.\n`);
    });
}

/** Asks at a terminal; elsewhere only --yes goes ahead, so a script never deletes by accident. */
export async function confirmOrRefuse(yes: boolean | undefined, question: string): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY) throw new UsageError(`${question} Pass --yes to confirm.`);
  if (!(await confirm({ message: question, default: false }, { output: process.stderr })))
    throw new Error("Nothing deleted.");
}
