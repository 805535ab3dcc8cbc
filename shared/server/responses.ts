import type { ServerResponse } from 'node:http';

/** JSON body of every error answer. */
export const errorBody = (reason: string, message: string) => JSON.stringify({ error: { reason, message } });

/** How the server writes an answer; `connection: close` is added while it drains. */
export interface Responder {
  respond(
    response: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body?: string | Uint8Array,
  ): void;
  json(response: ServerResponse, status: number, value: unknown, headers?: Record<string, string>): void;
  error(
    response: ServerResponse,
    status: number,
    reason: string,
    message: string,
    headers?: Record<string, string>,
  ): void;
}

export function responder(draining: () => boolean): Responder {
  const respond: Responder['respond'] = (response, status, headers, body = '') => {
    if (response.headersSent || response.destroyed) return;
    if (draining()) headers = { ...headers, connection: 'close' };
    response.writeHead(status, headers);
    response.end(body);
  };
  return {
    respond,
    json: (response, status, value, headers = {}) =>
      respond(response, status, { 'content-type': 'application/json', ...headers }, JSON.stringify(value)),
    error: (response, status, reason, message, headers = {}) =>
      respond(
        response,
        status,
        { 'content-type': 'application/json', ...headers },
        errorBody(reason, message),
      ),
  };
}
