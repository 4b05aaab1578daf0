import { useCallback, useEffect, useState } from "preact/hooks";
import { api, ok, type GrantInfo } from "../api";
import { formatTime } from "../format";
import { useSession } from "./App";
import { Empty, messageOf, Notice } from "./ui";

/** The owner's view of who may read or write the dataset: grant, change and revoke. */
export function Sharing(props: { account: string; dataset: string }) {
  const { refreshCatalog } = useSession();
  const [grants, setGrants] = useState<GrantInfo[] | null>(null);
  const [grantee, setGrantee] = useState("");
  const [permission, setPermission] = useState<"read" | "write">("read");
  const [message, setMessage] = useState<{ kind: "error" | "success"; text: string } | null>(null);
  const dataset = { AccountName: props.account, DatasetName: props.dataset };

  const load = useCallback(async () => {
    try {
      const body = await ok(api.GET("/dataset/{AccountName}/{DatasetName}/grants", { params: { path: dataset } }));
      setGrants(body.Data.GrantList);
    } catch (caught) {
      setMessage({ kind: "error", text: messageOf(caught) });
    }
  }, [props.account, props.dataset]);
  useEffect(() => void load(), [load]);

  async function share(event: Event) {
    event.preventDefault();
    try {
      const body = await ok(
        api.PUT("/dataset/{AccountName}/{DatasetName}/grants/{Grantee}", {
          params: { path: { ...dataset, Grantee: grantee } },
          body: { Permission: permission },
        }),
      );
      setMessage({ kind: "success", text: body.Status.Message });
      setGrantee("");
      await Promise.all([load(), refreshCatalog()]);
    } catch (caught) {
      setMessage({ kind: "error", text: messageOf(caught) });
    }
  }

  async function revoke(account: string) {
    try {
      const body = await ok(
        api.DELETE("/dataset/{AccountName}/{DatasetName}/grants/{Grantee}", {
          params: { path: { ...dataset, Grantee: account } },
        }),
      );
      setMessage({ kind: "success", text: body.Status.Message });
      await load();
    } catch (caught) {
      setMessage({ kind: "error", text: messageOf(caught) });
    }
  }

  return (
    <section class="card" aria-labelledby="sharing-title">
      <h2 id="sharing-title">Sharing</h2>
      <form class="inline-form" onSubmit={share}>
        <label>
          Account
          <input
            name="grantee"
            required
            maxLength={64}
            value={grantee}
            onInput={(event) => setGrantee(event.currentTarget.value)}
            placeholder="their account name"
          />
        </label>
        <label>
          May
          <select
            name="permission"
            value={permission}
            onChange={(event) => setPermission(event.currentTarget.value as "read" | "write")}
          >
            <option value="read">read: list, download and query</option>
            <option value="write">write: also upload and delete items</option>
          </select>
        </label>
        <button type="submit">Share</button>
      </form>
      {message && <Notice kind={message.kind}>{message.text}</Notice>}
      {grants?.length === 0 && (
        <Empty title="Not shared with anyone.">Name an account above to let it read or write this dataset.</Empty>
      )}
      {grants && grants.length > 0 && (
        <ul class="grants">
          {grants.map((grant) => (
            <li key={grant.AccountName}>
              <span>
                <strong>{grant.AccountName}</strong> may {grant.Permission}
                <span class="muted"> · since {formatTime(grant.GrantedAt)}</span>
              </span>
              <button
                type="button"
                class="small danger"
                onClick={() => void revoke(grant.AccountName)}
                aria-label={`Revoke ${grant.AccountName}'s access`}
              >
                Revoke
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
