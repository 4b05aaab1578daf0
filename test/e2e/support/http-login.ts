/** Logs in through the development provider over plain HTTP, as `curl` with a cookie jar would; returns the tokens. */
export async function httpLogin(
  baseUrl: string,
  username: string,
): Promise<{ accessToken: string; refreshToken: string }> {
  const cookies = new Map<string, string>();
  const remember = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const [name = "", value = ""] = pair.split("=");
      cookies.set(name.trim(), value.trim());
    }
  };
  const cookieHeader = () => [...cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  const step = async (url: string, init: RequestInit = {}) => {
    const response = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), cookie: cookieHeader() },
    });
    remember(response);
    return response;
  };

  const start = await step(`${baseUrl}/v1/auth`);
  const authorize = new URL(start.headers.get("location")!);
  const form = new URLSearchParams(authorize.searchParams);
  form.set("username", username);
  const signedIn = await step(`${baseUrl}/idp/authorize`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form,
  });
  let tokens = await step(signedIn.headers.get("location")!, { headers: { accept: "application/json" } });
  if (tokens.status === 401) {
    tokens = await step(`${baseUrl}/v1/auth/terms`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ state: cookies.get("dqs_login") ?? "", accept: "yes" }),
    });
  }
  if (tokens.status !== 200) throw new Error(`login failed: ${tokens.status} ${await tokens.text()}`);
  const body = (await tokens.json()) as { Data: { AccessToken: string; RefreshToken: string } };
  return { accessToken: body.Data.AccessToken, refreshToken: body.Data.RefreshToken };
}
