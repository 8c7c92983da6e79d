// urql with graphcache (node) against a running Roost, set up as docs/api/clients.md
// shows: the committed introspection as graphcache's schema. argv[2]: a JSON file
// {url, introspection, viewer, star}. Prints one JSON line; the Python test judges it.
import { readFile } from "node:fs/promises";
import { Client, fetchExchange, gql } from "@urql/core";
import { cacheExchange } from "@urql/exchange-graphcache";
import { relayPagination } from "@urql/exchange-graphcache/extras";

const config = JSON.parse(await readFile(process.argv[2], "utf8"));
const warnings = [];
const warn = console.warn;
console.warn = (...args) => warnings.push(args.map(String).join(" "));

const client = new Client({
  url: `${config.url}/graphql`,
  fetchOptions: () => ({ headers: { authorization: `Bearer ${config.viewer.token}` } }),
  exchanges: [
    cacheExchange({
      schema: config.introspection,
      resolvers: { User: { followers: relayPagination() } },
    }),
    fetchExchange,
  ],
});

const out = {};
// 1. A typed error through the normalised cache: fields of `... on Error` kept.
const MODERATION = gql`query { moderation { __typename ... on Error { code message } } }`;
out.network = (await client.query(MODERATION, {}).toPromise()).data?.moderation ?? null;
out.cached = (
  await client.query(MODERATION, {}, { requestPolicy: "cache-only" }).toPromise()
).data?.moderation ?? null;

// 2. relayPagination merges pages of 3 into one list.
const FOLLOWERS = gql`query ($u: String!, $after: String) { user(username: $u) { id
  followers(first: 3, after: $after) { edges { cursor node { id username } }
  pageInfo { endCursor hasNextPage } } } }`;
let after = null;
let merged = null;
for (let page = 0; page < 10; page++) {
  const r = await client.query(FOLLOWERS, { u: config.star, after }).toPromise();
  if (r.error) throw r.error;
  merged = r.data.user.followers;
  if (!merged.pageInfo.hasNextPage) break;
  after = merged.pageInfo.endCursor;
}
out.usernames = merged.edges.map((e) => e.node.username);
out.warnings = warnings;
console.warn = warn;
console.log(JSON.stringify(out));
