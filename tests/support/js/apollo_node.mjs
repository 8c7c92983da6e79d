// Apollo Client (node) against a running Roost, set up as docs/api/clients.md shows.
// argv[2]: a JSON file {url, ws, possibleTypes, viewer, author, star, target, followers}
// (tokens, usernames and ids made by the test). Prints one JSON line of what each
// scenario saw; the Python test judges it.
import { readFile } from "node:fs/promises";
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { GraphQL17Alpha9Handler } from "@apollo/client/incremental";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition, relayStylePagination } from "@apollo/client/utilities";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const config = JSON.parse(await readFile(process.argv[2], "utf8"));
const out = {};

function client({ token, possibleTypes, typePolicies, ws, wsOnly, incremental } = {}) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  let link = new HttpLink({ uri: `${config.url}/graphql`, headers });
  if (wsOnly) {
    link = new GraphQLWsLink(wsOnly);
  } else if (ws) {
    link = ApolloLink.split(
      ({ query }) => {
        const d = getMainDefinition(query);
        return d.kind === "OperationDefinition" && d.operation === "subscription";
      },
      new GraphQLWsLink(ws),
      link,
    );
  }
  return new ApolloClient({
    link,
    cache: new InMemoryCache({ possibleTypes, typePolicies }),
    ...(incremental ? { incrementalHandler: new GraphQL17Alpha9Handler() } : {}),
  });
}

// 1. Typed errors through the normalised cache, with and without the shipped type map.
const MODERATION = gql`query Moderation { moderation { __typename
  ... on Error { code message } ... on Moderation { __typename } } }`;
out.typedErrors = {};
for (const [name, possibleTypes] of [["withMap", config.possibleTypes], ["withoutMap", undefined]]) {
  const c = client({ token: config.viewer.token, possibleTypes });
  const result = await c.query({ query: MODERATION, fetchPolicy: "network-only" });
  out.typedErrors[name] = {
    result: result.data?.moderation ?? null,
    cached: c.readQuery({ query: MODERATION })?.moderation ?? null,
  };
}

// 2. Relay-style paging: fetchMore page by page, merged by relayStylePagination.
const FOLLOWERS = gql`query Followers($u: String!, $after: String) { user(username: $u) {
  id followers(first: 3, after: $after) { edges { cursor node { id username } }
  pageInfo { endCursor hasNextPage } } } }`;
{
  const c = client({
    token: config.viewer.token,
    possibleTypes: config.possibleTypes,
    typePolicies: { User: { fields: { followers: relayStylePagination() } } },
  });
  const watched = c.watchQuery({ query: FOLLOWERS, variables: { u: config.star } });
  const seen = [];
  const sub = watched.subscribe({ next: (r) => seen.push(r.data?.user?.followers?.edges?.length) });
  let page = await c.query({ query: FOLLOWERS, variables: { u: config.star } });
  let pages = 1;
  while (page.data.user.followers.pageInfo.hasNextPage && pages < 20) {
    page = await watched.fetchMore({
      variables: { after: page.data.user.followers.pageInfo.endCursor },
    });
    pages += 1;
  }
  const merged = c.readQuery({ query: FOLLOWERS, variables: { u: config.star } });
  out.paging = {
    pages,
    usernames: merged.user.followers.edges.map((e) => e.node.username),
    hasNextPage: merged.user.followers.pageInfo.hasNextPage,
    watchedSizes: seen,
  };
  sub.unsubscribe();
}

// 3. A mutation's payload updates the normalised cache: no refetch.
const TARGET = gql`query Target($u: String!) { user(username: $u) {
  id followerCount followedByViewer } }`;
const FOLLOW = gql`mutation Follow($id: ID!) { follow(input: { userId: $id }) { __typename
  ... on FollowSuccess { user { id followerCount followedByViewer } }
  ... on Error { code message } } }`;
{
  const c = client({ token: config.viewer.token, possibleTypes: config.possibleTypes });
  const before = (await c.query({ query: TARGET, variables: { u: config.target.username } })).data;
  const mutated = await c.mutate({ mutation: FOLLOW, variables: { id: config.target.id } });
  const after = c.readQuery({ query: TARGET, variables: { u: config.target.username } });
  // cache-first: answered from the cache the payload updated
  const again = await c.query({ query: TARGET, variables: { u: config.target.username } });
  out.payload = {
    before: before.user,
    payload: mutated.data.follow,
    after: after.user,
    again: again.data.user,
  };
}

// 4. A subscription over graphql-ws (graphql-transport-ws): feedItemAdded while the
//    author posts; the protocol confirms a subscription only with its first event, so
//    the author posts until one arrives.
{
  const ws = createClient({
    url: config.ws,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${config.viewer.token}` },
  });
  const c = client({ token: config.viewer.token, possibleTypes: config.possibleTypes, ws });
  const author = client({ token: config.author.token, possibleTypes: config.possibleTypes });
  const FEED = gql`subscription Feed { feedItemAdded { id caption author { username } } }`;
  const POST = gql`mutation Post($c: String!) { createPost(input: { caption: $c }) {
    __typename ... on CreatePostSuccess { post { id } } ... on Error { code message } } }`;
  const posted = [];
  const event = await new Promise((resolve, reject) => {
    const sub = c.subscribe({ query: FEED }).subscribe({
      next: (r) => {
        sub.unsubscribe();
        resolve(r.data?.feedItemAdded ?? { errors: r.error?.message ?? r });
      },
      error: reject,
    });
    (async () => {
      for (let i = 0; i < 60; i++) {
        const r = await author.mutate({ mutation: POST, variables: { c: `apollo ${i}` } });
        posted.push(r.data.createPost.post?.id ?? r.data.createPost.code);
        await new Promise((ok) => setTimeout(ok, 500));
        if (sub.closed) return;
      }
      reject(new Error("no feedItemAdded after 60 posts"));
    })().catch(reject);
  });
  const cachedPost = c.cache.extract()[c.cache.identify(event)] ?? null;
  out.subscription = { event, posted, cachedPost };
  await ws.dispose();
}

// 5. @defer and @stream over HTTP multipart, read by Apollo Client's own multipart parser
//    (graphql-core 3.3's incremental format: pending / incremental / completed).
{
  const c = client({
    token: config.viewer.token,
    possibleTypes: config.possibleTypes,
    incremental: true,
  });
  const DEFERRED = gql`query Deferred($u: String!) { user(username: $u) { id username
    ... @defer(label: "counts") { followerCount followingCount } } }`;
  const STREAMED = gql`query Streamed($u: String!) { user(username: $u) { id
    followers(first: 5) { edges @stream(initialCount: 1) { cursor node { id username } } } } }`;
  const watch = (query, on = c) =>
    new Promise((resolve, reject) => {
      const seen = [];
      const sub = on
        .watchQuery({ query, variables: { u: config.star }, fetchPolicy: "network-only" })
        .subscribe({
          next: (r) => {
            seen.push({ dataState: r.dataState, data: r.data, error: r.error?.message });
            if (r.dataState === "complete" || r.error) {
              sub.unsubscribe();
              resolve(seen);
            }
          },
          error: reject,
        });
    });
  out.defer = await watch(DEFERRED);
  // client.query settles with the whole result, every streamed item merged
  const streamed = await c.query({
    query: STREAMED,
    variables: { u: config.star },
    fetchPolicy: "network-only",
  });
  out.stream = [{ dataState: streamed.dataState ?? "complete", data: streamed.data }];

  // 6. The same @defer over graphql-ws (graphql-transport-ws): the parts as `next` messages.
  const ws = createClient({
    url: config.ws,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${config.viewer.token}` },
  });
  const overWs = client({ possibleTypes: config.possibleTypes, wsOnly: ws, incremental: true });
  out.deferOverWs = await watch(DEFERRED, overWs);
  await ws.dispose();
}

console.log(JSON.stringify(out));
