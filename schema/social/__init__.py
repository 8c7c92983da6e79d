"""The follow graph's mutations (follow, unfollow, block, unblock, approve and reject
a follow request) and the pending follow requests connection."""
