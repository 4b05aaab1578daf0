// Starts Swagger UI on the docs page (/v1/docs); a file of its own because the page's policy allows no inline script.
window.ui = SwaggerUIBundle({ url: "/v1/openapi.json", dom_id: "#swagger-ui", deepLinking: true, validatorUrl: null });
