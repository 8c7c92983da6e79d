"""Media of posts: uploads processed by the media worker into variants
(docs/seeds/chroma-architecture.md "Media pipeline")."""
