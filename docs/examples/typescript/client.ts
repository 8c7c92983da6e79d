// A minimal Roost client: fetch for queries and mutations, graphql-ws for subscriptions.
// ROOST_URL (http://127.0.0.1:8000), ROOST_USERNAME and ROOST_PASSWORD say where and who;
// ROOST_PHOTO (a JPEG file) is posted as a photo; ROOST_TYPE_MAP is the type map
// (default: the repository's schema/possibleTypes.json, which `make schema` writes).
import { readFile } from "node:fs/promises";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const url = process.env.ROOST_URL ?? "http://127.0.0.1:8000";
const endpoint = `${url}/graphql`;

// The type map: each interface and union with its object types. A mutation answers a
// union of its success payload and typed errors; the map says which members are Errors.
const typeMapFile = process.env.ROOST_TYPE_MAP ??
  new URL("../../../../schema/possibleTypes.json", import.meta.url);
const possibleTypes: Record<string, string[]> = JSON.parse(await readFile(typeMapFile, "utf8"));
type TypedError = { __typename: string; code: string; message: string };
function isError(value: { __typename: string }): value is TypedError {
  return possibleTypes.Error.includes(value.__typename);
}

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
type LogIn = { __typename: "LogInSuccess"; accessToken: string } | TypedError;
const { logIn } = await gql<{ logIn: LogIn }>(
  `mutation($u: String!, $p: String!) { logIn(input: { username: $u, password: $p }) {
     __typename ... on LogInSuccess { accessToken } ... on Error { code message } } }`,
  { u: process.env.ROOST_USERNAME ?? "sd0", p: process.env.ROOST_PASSWORD ?? "roost-dev-password" },
);
if (isError(logIn)) throw new Error(`logIn: ${logIn.code} ${logIn.message}`);
const token = logIn.accessToken;

// 2. A query as that user.
const { viewer } = await gql<{ viewer: { id: string; username: string; followingCount: number } }>(
  "{ viewer { id username followingCount } }", {}, token,
);
console.log(JSON.stringify({ viewer: { username: viewer.username, followingCount: viewer.followingCount } }));

// A typed error, told by the type map: nobody follows themselves.
type Follow = { __typename: "FollowSuccess" | "FollowRequestedSuccess" } | TypedError;
const { follow } = await gql<{ follow: Follow }>(
  `mutation($id: ID!) { follow(input: { userId: $id }) {
     __typename ... on Error { code message } } }`, { id: viewer.id }, token,
);
if (!isError(follow)) throw new Error(`follow: ${follow.__typename}, not an Error`);
console.log(JSON.stringify({ typedError: { __typename: follow.__typename, code: follow.code } }));

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

// 4. A photo post: reserve an upload, send the bytes straight to storage (no GraphQL,
//    no Roost token), create the post (PROCESSING), hear that it is published, read
//    its variants and fetch one.
const photoPath = process.env.ROOST_PHOTO;
if (photoPath) {
  const bytes = new Uint8Array(await readFile(photoPath));
  type Upload = { id: string; url: string; method: string; headers: { name: string; value: string }[] };
  type Reserved = { __typename: "CreateMediaUploadSuccess"; upload: Upload } | TypedError;
  const { createMediaUpload } = await gql<{ createMediaUpload: Reserved }>(
    `mutation($n: Int!) { createMediaUpload(input: { kind: IMAGE, contentType: "image/jpeg",
       byteSize: $n, altText: "A test picture" }) { __typename
       ... on CreateMediaUploadSuccess { upload { id url method headers { name value } } }
       ... on Error { code message } } }`, { n: bytes.length }, token,
  );
  if (isError(createMediaUpload)) throw new Error(`createMediaUpload: ${createMediaUpload.code}`);
  const upload = createMediaUpload.upload;
  const sent = await fetch(upload.url, {
    method: upload.method,
    headers: Object.fromEntries(upload.headers.map((h) => [h.name, h.value])),
    body: bytes,
  });
  if (!sent.ok) throw new Error(`upload: HTTP ${sent.status} ${await sent.text()}`);

  // Listen first: the author's notification says when processing finished.
  const finished = ws.iterate<{ notificationAdded: { kind: string; post: { id: string } } }>({
    query: "subscription { notificationAdded { kind post { id } } }",
  });
  type Created = { __typename: "CreatePostSuccess"; post: { id: string; state: string } } | TypedError;
  const { createPost: photo } = await gql<{ createPost: Created }>(
    `mutation($ids: [ID!]!) { createPost(input: { caption: "A photo", uploadIds: $ids }) {
       __typename ... on CreatePostSuccess { post { id state } } ... on Error { code message } } }`,
    { ids: [upload.id] }, token,
  );
  if (isError(photo)) throw new Error(`createPost: ${photo.code}`);
  let kind = "";
  while (kind !== "POST_PUBLISHED" && kind !== "POST_FAILED") {
    const next = await finished.next();
    if (next.done) throw new Error("subscription ended");
    if (next.value.data?.notificationAdded.post?.id === photo.post.id) {
      kind = next.value.data.notificationAdded.kind;
    }
  }
  await finished.return?.();
  type Variant = { name: string; url: string; width: number; height: number };
  const { node } = await gql<{ node: { state: string; media: { width: number; height: number; variants: Variant[] }[] } }>(
    `query($id: ID!) { node(id: $id) { ... on Post { state
       media { width height variants { name url width height } } } } }`,
    { id: photo.post.id }, token,
  );
  const feed = node.media[0]?.variants.find((v) => v.name === "feed");
  const image = feed ? await fetch(feed.url) : undefined;
  console.log(JSON.stringify({
    photo: { created: photo.post.state, notified: kind, state: node.state,
             variants: node.media[0]?.variants.map((v) => v.name),
             fetched: image ? [image.status, image.headers.get("content-type")] : null },
  }));
}
await ws.dispose();
