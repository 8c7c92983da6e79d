// Apollo Client in a browser page served from another origin than Roost's (bundled by
// esbuild). window.ROOST: {url, token}. Runs a query, a mutation, a subscription over
// graphql-ws and a persisted query over GET; leaves what it saw in window.__roost
// ({done, error?, requests, query, mutation, subscription, apq}).
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition } from "@apollo/client/utilities";
import { createClient } from "graphql-ws";

const { url, token } = window.ROOST;
const state = { done: false, requests: [] };
window.__roost = state;

// Every request the client makes, with its answer's status.
async function recordingFetch(input, init) {
  const entry = { method: init?.method ?? "GET", url: String(input) };
  state.requests.push(entry);
  const response = await fetch(input, init);
  entry.status = response.status;
  return response;
}

async function sha256(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const auth = { authorization: `Bearer ${token}` };
const http = new PersistedQueryLink({ sha256, useGETForHashedQueries: true }).concat(
  new HttpLink({ uri: `${url}/graphql`, headers: auth, fetch: recordingFetch }),
);
const wsClient = createClient({
  url: `${url.replace(/^http/, "ws")}/graphql`,
  connectionParams: auth,
  on: { closed: (e) => (state.closed = { code: e?.code, reason: e?.reason }) },
});
const client = new ApolloClient({
  link: ApolloLink.split(
    ({ query }) => {
      const d = getMainDefinition(query);
      return d.kind === "OperationDefinition" && d.operation === "subscription";
    },
    new GraphQLWsLink(wsClient),
    http,
  ),
  cache: new InMemoryCache(),
  // Sends apollographql-client-name / -version: headers a preflight must allow.
  clientAwareness: { name: "roost-cors-test", version: "1.0" },
});

try {
  const VIEWER = gql`query Viewer { viewer { id username } }`;
  state.query = (await client.query({ query: VIEWER })).data;

  const POST = gql`mutation Post { createPost(input: { caption: "from another origin" }) {
    __typename ... on CreatePostSuccess { post { id } } ... on Error { code message } } }`;
  state.mutation = (await client.mutate({ mutation: POST })).data.createPost;
  const postId = state.mutation.post.id;

  // graphql-transport-ws confirms a subscription with its first event: like and unlike
  // the post until one arrives.
  const ENGAGEMENT = gql`subscription Engagement($id: ID!) {
    postEngagementChanged(postId: $id) { likeCount commentCount post { id } } }`;
  const LIKE = gql`mutation Like($id: ID!) { likePost(input: { postId: $id }) { __typename } }`;
  const UNLIKE = gql`mutation Unlike($id: ID!) { unlikePost(input: { postId: $id }) { __typename } }`;
  state.subscription = await new Promise((resolve, reject) => {
    const sub = client.subscribe({ query: ENGAGEMENT, variables: { id: postId } }).subscribe({
      next: (r) => {
        sub.unsubscribe();
        if (r.error) reject(r.error);
        else resolve(r.data.postEngagementChanged);
      },
      error: reject,
    });
    (async () => {
      for (let i = 0; i < 60 && !sub.closed; i++) {
        await new Promise((ok) => setTimeout(ok, 300));
        await client.mutate({ mutation: i % 2 ? UNLIKE : LIKE, variables: { id: postId } });
      }
    })().catch(reject);
  });

  // A persisted query by hash over GET: unknown at first (sent again with its text,
  // which registers it), then answered by hash alone.
  const USER = gql`query ByName($u: String!) { user(username: $u) { id username } }`;
  const variables = { u: state.query.viewer.username };
  await client.query({ query: USER, variables, fetchPolicy: "network-only" });
  state.apq = (await client.query({ query: USER, variables, fetchPolicy: "network-only" })).data;
} catch (error) {
  state.error = `${error?.name}: ${error?.message}`;
} finally {
  await wsClient.dispose();
  state.done = true;
  document.getElementById("out").textContent = JSON.stringify(state, null, 1);
}
