"""Posts: the Post node, post connections, hashtags, and the createPost/deletePost
inputs, payloads and result unions."""
