// relay-runtime (node) against a running Roost. The operations are graphql tags that
// relay-compiler compiles; `graphql` below hands back the compiled artifact as
// babel-plugin-relay would. argv[2]: a JSON file {url, viewer, star, target} made by
// the test. Prints one JSON line of what each scenario saw; the Python test judges it.
"use strict";
const { readFileSync } = require("node:fs");
const {
  Environment,
  Network,
  RecordSource,
  Store,
  commitMutation,
  createOperationDescriptor,
  fetchQuery,
  getSelector,
} = require("relay-runtime");

function graphql([text]) {
  const name = /(?:query|mutation|fragment)\s+(\w+)/.exec(text)[1];
  return require(`./__generated__/${name}.graphql.js`);
}

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));

const FOLLOWERS_QUERY = graphql`
  query RoostRelayFollowersQuery($u: String!) {
    user(username: $u) { id username ...RoostRelay_followers }
  }
`;
// A keyset connection paged both ways; the refetch query goes through node(id:).
const FOLLOWERS_FRAGMENT = graphql`
  fragment RoostRelay_followers on User
  @refetchable(queryName: "RoostRelayFollowersPaginationQuery")
  @argumentDefinitions(
    first: { type: "Int", defaultValue: 3 }
    after: { type: "String" }
    last: { type: "Int" }
    before: { type: "String" }
  ) {
    followers(first: $first, after: $after, last: $last, before: $before)
    @connection(key: "RoostRelay_followers") {
      totalCount
      edges { node { id username } }
    }
  }
`;
const PAGINATION_QUERY = require("./__generated__/RoostRelayFollowersPaginationQuery.graphql.js");
const TARGET_QUERY = graphql`
  query RoostRelayTargetQuery($u: String!) {
    user(username: $u) { id followerCount followedByViewer }
  }
`;
const FOLLOW_MUTATION = graphql`
  mutation RoostRelayFollowMutation($id: ID!) {
    follow(input: { userId: $id }) {
      __typename
      ... on FollowSuccess { user { id followerCount followedByViewer } }
      ... on Error { code message }
    }
  }
`;

function environment(token) {
  const requests = [];
  const network = Network.create(async (operation, variables) => {
    requests.push({ name: operation.name, variables });
    const resp = await fetch(`${config.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: operation.text, variables }),
    });
    return await resp.json();
  });
  const env = new Environment({ network, store: new Store(new RecordSource()) });
  return { env, requests };
}

/** What the store holds for a query with these variables (no network). */
function stored(env, query, variables) {
  const snapshot = env.lookup(createOperationDescriptor(query, variables).fragment);
  return { data: snapshot.data, missing: snapshot.isMissingData };
}

/** The followers fragment of the user `ref`, read from the store. */
function followers(env, ref) {
  const snapshot = env.lookup(getSelector(FOLLOWERS_FRAGMENT, ref));
  const connection = snapshot.data.followers;
  return {
    usernames: connection.edges.map((e) => e.node.username),
    pageInfo: connection.pageInfo,
    totalCount: connection.totalCount,
    missing: snapshot.isMissingData,
  };
}

async function forward() {
  const { env, requests } = environment(config.viewer.token);
  const variables = { u: config.star };
  await fetchQuery(env, FOLLOWERS_QUERY, variables).toPromise();
  env.retain(createOperationDescriptor(FOLLOWERS_QUERY, variables)); // as a screen would
  const { user } = stored(env, FOLLOWERS_QUERY, variables).data;
  let page = followers(env, user);
  const sizes = [page.usernames.length];
  while (page.pageInfo.hasNextPage && sizes.length < 20) {
    // loadNext: the refetch query after the connection's end, merged by ConnectionHandler
    const after = page.pageInfo.endCursor;
    const next = { id: user.id, first: 3, after, last: null, before: null };
    await fetchQuery(env, PAGINATION_QUERY, next).toPromise();
    page = followers(env, user);
    sizes.push(page.usernames.length);
  }
  return { ...page, sizes, requests: requests.map((r) => r.name) };
}

async function backward() {
  const { env, requests } = environment(config.viewer.token);
  const { user } = await fetchQuery(env, FOLLOWERS_QUERY, { u: config.star }).toPromise();
  // the list's last 3 through the refetch query, then loadPrevious until its start
  const last = { id: user.id, first: null, after: null, last: 3, before: null };
  await fetchQuery(env, PAGINATION_QUERY, last).toPromise();
  env.retain(createOperationDescriptor(PAGINATION_QUERY, last));
  const ref = stored(env, PAGINATION_QUERY, last).data.node;
  let page = followers(env, ref);
  const sizes = [page.usernames.length];
  const lastPage = page.usernames;
  while (page.pageInfo.hasPreviousPage && sizes.length < 20) {
    const before = page.pageInfo.startCursor;
    const previous = { id: user.id, first: null, after: null, last: 3, before };
    await fetchQuery(env, PAGINATION_QUERY, previous).toPromise();
    page = followers(env, ref);
    sizes.push(page.usernames.length);
  }
  return { ...page, sizes, lastPage, variables: requests.slice(1).map((r) => r.variables) };
}

function mutate(env, variables) {
  return new Promise((resolve, reject) => {
    commitMutation(env, {
      mutation: FOLLOW_MUTATION,
      variables,
      onCompleted: (response, errors) => resolve({ response, errors: errors ?? null }),
      onError: reject,
    });
  });
}

async function payload() {
  const { env, requests } = environment(config.viewer.token);
  const variables = { u: config.target.username };
  await fetchQuery(env, TARGET_QUERY, variables).toPromise();
  const before = stored(env, TARGET_QUERY, variables).data.user;
  const result = await mutate(env, { id: config.target.id });
  const after = stored(env, TARGET_QUERY, variables);
  // the typed error: onCompleted gets what the store holds for the mutation (Relay
  // reads it back through the Error interface), and the normalised record itself
  const refused = await mutate(env, { id: config.viewer.id });
  const records = env.getStore().getSource().toJSON();
  const errorRecord =
    Object.values(records).find((r) => r.__typename === "CannotFollowSelfError") ?? null;
  // what Relay learnt from the discriminator relay-compiler asked for (`__isError`)
  const isError = Object.fromEntries(
    ["CannotFollowSelfError", "FollowSuccess"].map((t) => [
      t,
      records[`client:__type:${t}`]?.__isError,
    ]),
  );
  return {
    before,
    response: result.response.follow,
    after: after.data.user,
    afterMissing: after.missing,
    refused: refused.response.follow,
    errorRecord,
    isError,
    requests: requests.map((r) => r.name),
  };
}

async function main() {
  const out = {};
  out.forward = await forward();
  out.backward = await backward();
  out.payload = await payload();
  console.log(JSON.stringify(out));
}

main().catch((error) => {
  console.error(error?.stack ?? error);
  process.exit(1);
});
