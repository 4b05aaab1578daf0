import { apiRoute } from "../api-route";
import { rotateWebhookSecret, webhookSecret } from "../../webhooks/secrets";
import { authenticated } from "../middleware/bearer-auth";
import { createRouter } from "../router";
import { envelope, errorResponses, jsonResponse, WebhookSecretResponse } from "../schemas";

export const webhookSecretRoutes = createRouter();

webhookSecretRoutes.openapi(
  apiRoute({
    method: "get",
    path: "/me/webhook-secret",
    tags: ["user", "experimental"],
    summary: "The secret your completion webhooks are signed with",
    description:
      "Created on first use. Every completion webhook (SqlRequest.Callback) of yours is signed with it per Standard Webhooks; verify with any Standard Webhooks library.",
    ...authenticated,
    responses: {
      200: jsonResponse(WebhookSecretResponse, "The secret"),
    },
  }),
  async (c) => {
    const secret = await webhookSecret(c.env.DB, c.get("principal").userId);
    c.header("Cache-Control", "no-store");
    return c.json({ ...envelope(200, "OK"), Data: { Secret: secret } }, 200);
  },
);

webhookSecretRoutes.openapi(
  apiRoute({
    method: "post",
    path: "/me/webhook-secret/rotate",
    tags: ["user", "experimental"],
    summary: "Replace your webhook signing secret",
    description:
      "Answers the new secret. For a day after, webhooks carry a signature with the old secret too (webhook-signature lists both), so a receiver can switch without losing one.",
    ...authenticated,
    responses: {
      200: jsonResponse(WebhookSecretResponse, "The new secret"),
    },
  }),
  async (c) => {
    const secret = await rotateWebhookSecret(c.env.DB, c.get("principal").userId);
    c.header("Cache-Control", "no-store");
    return c.json(
      {
        ...envelope(200, "Rotated; webhooks are signed with the old secret too for 24 hours."),
        Data: { Secret: secret },
      },
      200,
    );
  },
);
