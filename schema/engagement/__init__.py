"""Comments and likes: the Comment node, the comment and like connections, and the
like/unlike/addComment/deleteComment inputs, payloads and result unions."""
