"""GraphQL documents that more than one test module sends."""

from __future__ import annotations

REFRESH = """
mutation($t: String!) {
  refreshSession(input: { refreshToken: $t }) {
    __typename
    ... on RefreshSessionSuccess { accessToken refreshToken }
    ... on Error { code }
  }
}"""


LOG_IN = """
mutation($u: String!, $p: String!) {
  logIn(input: { username: $u, password: $p }) {
    __typename
    ... on LogInSuccess { accessToken refreshToken user { username } }
    ... on Error { code message }
  }
}"""


COMMENT = """mutation($id: ID!, $body: String!, $parent: ID) {
  addComment(input: { postId: $id, body: $body, parentId: $parent }) { __typename
    ... on AddCommentSuccess { comment { id body } }
    ... on Error { code message } ... on ValidationError { field } } }"""


UNLIKE = """mutation($id: ID!) { unlikePost(input: { postId: $id }) { __typename
  ... on UnlikePostSuccess { post { likeCount viewerHasLiked } } ... on Error { code } } }"""


LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename
  ... on LikePostSuccess { post { likeCount viewerHasLiked } } ... on Error { code } } }"""


COUNTS = """query($u: String!) { user(username: $u) { followerCount followingCount } }"""


UNBLOCK = """mutation($id: ID!) { unblock(input: { userId: $id }) {
  __typename ... on UnblockSuccess { user { blockedWithViewer } } ... on Error { code } } }"""


BLOCK = """mutation($id: ID!) { block(input: { userId: $id }) {
  __typename ... on BlockSuccess { user { username blockedWithViewer } }
  ... on Error { code } } }"""


UNFOLLOW = """mutation($id: ID!) { unfollow(input: { userId: $id }) {
  __typename ... on UnfollowSuccess { user { followerCount followedByViewer } }
  ... on Error { code } } }"""


FOLLOW = """mutation($id: ID!) { follow(input: { userId: $id }) {
  __typename
  ... on FollowSuccess { user { username followerCount followedByViewer followsViewer } }
  ... on Error { code message }
  ... on ValidationError { field } } }"""


SET_PRIVATE = """mutation($p: Boolean!) { updateProfile(input: { isPrivate: $p }) {
  __typename ... on UpdateProfileSuccess { user { isPrivate followerCount } }
  ... on Error { code } } }"""


REJECT = """mutation($id: ID!) { rejectFollowRequest(input: { userId: $id }) {
  __typename ... on RejectFollowRequestSuccess { user { username followsViewer } }
  ... on Error { code message } } }"""


APPROVE = """mutation($id: ID!) { approveFollowRequest(input: { userId: $id }) {
  __typename ... on ApproveFollowRequestSuccess { user { username followsViewer } }
  ... on Error { code message } ... on ValidationError { field } } }"""


FOLLOW_OR_REQUEST = """mutation($id: ID!) { follow(input: { userId: $id }) {
  __typename
  ... on FollowSuccess { user { followerCount followedByViewer followRequestedByViewer } }
  ... on FollowRequestedSuccess { user { isPrivate followerCount followedByViewer
                                         followRequestedByViewer } }
  ... on Error { code message } } }"""


NOTIFICATION_SUB = """subscription { notificationAdded { id kind count read
  actor { username } post { id } } }"""


FEED_SUB = """subscription { feedItemAdded { id caption author { username displayName } } }"""


FEED = """query($first: Int!, $after: String) { viewer { feed(first: $first, after: $after) {
  edges { cursor node { id caption author { username } } }
  pageInfo { hasNextPage endCursor } } } }"""


CREATE = """mutation($c: String!) { createPost(input: { caption: $c }) {
  __typename ... on CreatePostSuccess { post { id caption } } ... on Error { code message } } }"""


MARK_READ = """mutation($ids: [ID!]) { markNotificationsRead(input: { ids: $ids }) { __typename
  ... on MarkNotificationsReadSuccess { unreadNotificationCount }
  ... on Error { code message } ... on ValidationError { field } } }"""


REGISTER = """mutation($p: DevicePlatform!, $t: String!) {
  registerDevice(input: { platform: $p, token: $t }) {
    __typename
    ... on RegisterDeviceSuccess { device { platform token registeredAt } }
    ... on Error { code message } ... on ValidationError { field } } }"""


NOTIFICATIONS_PAGE = """query($first: Int!, $after: String) { viewer { unreadNotificationCount
  notifications(first: $first, after: $after) {
    edges { cursor node { id kind count read createdAt actor { username }
      post { caption } comment { body } } }
    pageInfo { hasNextPage endCursor } } } }"""
