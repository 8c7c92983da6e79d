// A minimal Roost client: fetch for queries and mutations, graphql-ws for subscriptions.
// ROOST_URL (http://127.0.0.1:8000), ROOST_USERNAME and ROOST_PASSWORD say where and who.
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const url = process.env.ROOST_URL ?? "http://127.0.0.1:8000";
const endpoint = `${url}/graphql`;

type Result<T> = { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };

async function gql<T>(query: string, variables: object = {}, token?: string): Promise<T> {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as Result<T>;
  if (body.errors?.length) {
    const [e] = body.errors;
    throw new Error(`${e.extensions?.code ?? response.status}: ${e.message}`);
  }
  return body.data as T;
}

// 1. Sign in: a union of a success payload and typed errors.
const { logIn } = await gql<{ logIn: { accessToken?: string; code?: string; message?: string } }>(
  `mutation($u: String!, $p: String!) { logIn(input: { username: $u, password: $p }) {
     ... on LogInSuccess { accessToken } ... on Error { code message } } }`,
  { u: process.env.ROOST_USERNAME ?? "sd0", p: process.env.ROOST_PASSWORD ?? "roost-dev-password" },
);
if (!logIn.accessToken) throw new Error(`logIn: ${logIn.code} ${logIn.message}`);
const token = logIn.accessToken;

// 2. A query as that user.
const { viewer } = await gql<{ viewer: { username: string; followingCount: number } }>(
  "{ viewer { username followingCount } }", {}, token,
);
console.log(JSON.stringify({ viewer }));

// 3. A post of our own, and its like and comment counts over WebSocket
//    (graphql-transport-ws, authenticated in connection_init).
const { createPost } = await gql<{ createPost: { post: { id: string } } }>(
  `mutation { createPost(input: { caption: "Hello from the TypeScript client" }) {
     ... on CreatePostSuccess { post { id } } } }`, {}, token,
);
const postId = createPost.post.id;

const ws = createClient({
  url: endpoint.replace(/^http/, "ws"),
  webSocketImpl: WebSocket,
  connectionParams: { authorization: `Bearer ${token}` },
});
const events = ws.iterate<{ postEngagementChanged: { likeCount: number; commentCount: number } }>({
  query: `subscription($id: ID!) { postEngagementChanged(postId: $id) { likeCount commentCount } }`,
  variables: { id: postId },
});

// graphql-transport-ws confirms a subscription only with its first event: like and
// unlike the post until one arrives (each changes the counts, so each is an event).
let done = false;
const nudges = (async () => {
  for (let i = 0; i < 50 && !done; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const field = i % 2 === 0 ? "likePost" : "unlikePost";
    await gql(`mutation($id: ID!) { ${field}(input: { postId: $id }) { __typename } }`,
      { id: postId }, token);
  }
})();
const first = await events.next();
done = true;
console.log(JSON.stringify({ event: first.value?.data?.postEngagementChanged }));
await nudges;
await events.return?.();
await ws.dispose();
