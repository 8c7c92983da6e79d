"""Media of posts: uploads reserved by the client, processed by the media worker into
variants, published with their post (docs/seeds/chroma-architecture.md
"Media pipeline")."""
