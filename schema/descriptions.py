"""Descriptions the schema's conventions imply, filled in where a definition gives none
(docs/api/clients.md: graphql-schema-linter's default rules pass):

- a mutation's ``input`` argument, its ``*Input`` type, its ``*Result`` union and the
  ``*Success`` payload in it, described from the mutations that use them;
- Relay connections and edges (``edges``, ``pageInfo``, ``cursor``, ``node``) and the
  paging arguments (``first``, ``after``);
- :data:`DESCRIPTIONS`: the rest, by ``Type``, ``Type.field`` or ``Type.field(arg)``
  (enum values as ``Enum.VALUE``).

A description written beside a definition always wins.
"""

from __future__ import annotations

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    get_named_type,
)

FIRST = (
    "How many edges to return, from the start of the list or after `after` (at most "
    "MAX_PAGE_SIZE, 100 by default)."
)
AFTER = (
    "The `endCursor` of the previous page (or an edge's `cursor`): return the edges "
    "after it; null for the first page."
)
EDGES = "This page's edges, in the list's order."
PAGE_INFO = "Whether more edges follow this page, and the cursor to ask for them with."
CURSOR = "Pass it as `after` to read the edges that follow this one."


def _names(fields: list[str]) -> str:
    quoted = [f"`{f}`" for f in fields]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def describe(schema: GraphQLSchema, descriptions: dict[str, str] | None = None) -> None:
    """Fill in the missing descriptions of ``schema`` (graphql-core's objects) in place;
    ``descriptions`` defaults to :data:`DESCRIPTIONS`."""
    table = DESCRIPTIONS if descriptions is None else descriptions
    mutation = schema.mutation_type
    inputs: dict[str, list[str]] = {}
    results: dict[str, list[str]] = {}
    for name, field in (mutation.fields if mutation else {}).items():
        arg = field.args.get("input")
        if arg is not None:
            inputs.setdefault(get_named_type(arg.type).name, []).append(name)
            if arg.description is None:
                arg.description = "What to do: see the input type."
        results.setdefault(get_named_type(field.type).name, []).append(name)
    successes: dict[str, list[str]] = {}
    for union_name, mutations in results.items():
        union = schema.type_map.get(union_name)
        if isinstance(union, GraphQLUnionType):
            for member in union.types:
                if member.name.endswith("Success"):
                    successes.setdefault(member.name, []).extend(mutations)

    for type_name, named in schema.type_map.items():
        if type_name.startswith("__"):
            continue
        if named.description is None:
            if type_name in table:
                named.description = table[type_name]
            elif type_name in inputs:
                named.description = f"The input of {_names(inputs[type_name])}."
            elif isinstance(named, GraphQLUnionType) and type_name in results:
                named.description = (
                    f"What {_names(results[type_name])} returns: the success payload or a "
                    "typed error (`... on Error { code message }`)."
                )
            elif type_name in successes:
                named.description = f"{_names(successes[type_name])} succeeded."
            elif type_name.endswith("Edge"):
                named.description = "One entry of a page, with its cursor."
        if isinstance(named, GraphQLEnumType):
            for value_name, value in named.values.items():
                if value.description is None:
                    value.description = table.get(f"{type_name}.{value_name}")
        if isinstance(named, GraphQLInputObjectType):
            for field_name, input_field in named.fields.items():
                if input_field.description is None:
                    input_field.description = table.get(f"{type_name}.{field_name}")
        if not isinstance(named, GraphQLObjectType | GraphQLInterfaceType):
            continue
        for field_name, field in named.fields.items():
            key = f"{type_name}.{field_name}"
            if field.description is None:
                field.description = table.get(key) or _conventional(type_name, field_name, field)
            for arg_name, arg in field.args.items():
                if arg.description is None:
                    arg.description = table.get(f"{key}({arg_name})") or {
                        "first": FIRST,
                        "after": AFTER,
                    }.get(arg_name)


def _conventional(type_name: str, field_name: str, field) -> str | None:
    if type_name.endswith("Connection"):
        return {"edges": EDGES, "pageInfo": PAGE_INFO}.get(field_name)
    if type_name.endswith("Edge"):
        if field_name == "cursor":
            return CURSOR
        if field_name == "node":
            return f"The {get_named_type(field.type).name} of this entry."
    return None


#: The descriptions no convention gives.
DESCRIPTIONS: dict[str, str] = {
    # Roots and abstract types
    "Query": "The root of every read: `viewer`, `user`, `node`, search, explore, hashtags.",
    "Mutation": (
        "Every write. Each takes one `input` and returns a union of its success payload and "
        "typed errors (`... on Error { code message }`)."
    ),
    "ModerationResult": "The moderation queue for a moderator; ForbiddenError for anyone else.",
    "MediaKind": "What a medium is: IMAGE or VIDEO.",
    # Arguments
    "Query.node(id)": 'A global id (`base64("Type:<uuid>")`) of any Node.',
    "Query.nodes(ids)": "Up to 100 global ids; each answers its Node or null, in order.",
    "Query.user(username)": "The account's username, matched case-insensitively.",
    "Query.hashtag(name)": "The tag with or without its `#`, folded as posts' tags are.",
    "Query.searchUsers(query)": "Words, a prefix or a misspelling of usernames and display names.",
    "Query.explore(kind)": "Which explore list to read.",
    "Moderation.reports(status)": "Only reports in this state (all of them when null).",
    "Subscription.postEngagementChanged(postId)": "The global id of a post you may see.",
    "User.feed(order)": "RECENT (newest first) or RANKED (engagement and recency).",
    "Hashtag.posts(order)": "RECENT (newest first) or RANKED (as explore ranks: see `posts`).",
    # Enum values
    "DataExportStatus.PENDING": "The archive is being prepared.",
    "DataExportStatus.READY": "The archive can be downloaded from `url`.",
    "DevicePlatform.IOS": "An iPhone or iPad.",
    "DevicePlatform.ANDROID": "An Android device.",
    "DevicePlatform.WEB": "A web browser.",
    "MediaKind.IMAGE": "A photo.",
    "MediaKind.VIDEO": "A video.",
    "NotificationKind.FOLLOW": "`actor` follows you now.",
    "NotificationKind.FOLLOW_DIGEST": "Several accounts followed you (`count`) past the daily cap.",
    "NotificationKind.FOLLOW_REQUEST": "`actor` asks to follow your private account.",
    "NotificationKind.LIKE": "People liked your `post` (`count` of them).",
    "NotificationKind.COMMENT": "`actor` commented on your `post`.",
    "NotificationKind.REPLY": "`actor` replied to your `comment`.",
    "NotificationKind.MENTION": "`actor` mentioned you.",
    "PostState.PROCESSING": "Its media are being processed; only you see it.",
    "PostState.PUBLISHED": "Visible to those who may see your posts.",
    "PostState.FAILED": "Its media could not be published (`failureReason`); only you see it.",
    "ReportReason.SPAM": "Spam or scams.",
    "ReportReason.HARASSMENT": "Harassment or bullying.",
    "ReportReason.HATE_SPEECH": "Hate speech or symbols.",
    "ReportReason.VIOLENCE": "Violence or threats.",
    "ReportReason.NUDITY": "Nudity or sexual content.",
    "ReportReason.SELF_HARM": "Self-harm or suicide.",
    "ReportReason.MISINFORMATION": "False information.",
    "ReportReason.IMPERSONATION": "Pretending to be someone else.",
    "ReportReason.INTELLECTUAL_PROPERTY": "A copyright or trademark violation.",
    "ReportReason.OTHER": "Something else (say what in `note`).",
    "ReportResolution.ACTIONED": "A moderator acted on it (a ban, a removal).",
    "ReportResolution.DISMISSED": "A moderator found nothing to act on.",
    "ReportStatus.OPEN": "Waiting for a moderator.",
    "ReportStatus.ACTIONED": "A moderator acted on it.",
    "ReportStatus.DISMISSED": "A moderator dismissed it.",
    "ReportSubject.POST": "A post was reported.",
    "ReportSubject.USER": "An account was reported.",
    "UploadProblem.USED": "Another post has it, or this one names it twice.",
    "UploadProblem.EXPIRED": "Its upload window passed: reserve a new one and send it again.",
    "UploadProblem.NOT_UPLOADED": "No bytes arrived, or fewer than declared.",
    "UploadProblem.FAILED": "Its bytes were refused.",
    # Input fields
    "AddCommentInput.postId": "The global id of the post to comment on.",
    "CancelAccountDeletionInput.username": "The account's username.",
    "CancelAccountDeletionInput.password": "The account's password.",
    "ChangePasswordInput.currentPassword": "Your password now, to confirm it is you.",
    "CreateMediaUploadInput.kind": "IMAGE or VIDEO.",
    "DeleteCommentInput.commentId": "The global id of the comment.",
    "LogInInput.username": "Your username (any case).",
    "LogInInput.password": "Your password.",
    "MediaInput.url": "An https URL on one of MEDIA_URL_ALLOWED_HOSTS.",
    "MediaInput.kind": "IMAGE or VIDEO.",
    "RefreshSessionInput.refreshToken": "The refresh token of your last logIn or refresh.",
    "RegisterDeviceInput.platform": "IOS, ANDROID or WEB.",
    "ReportInput.id": "The global id of the post or account reported.",
    "ReportInput.reason": "Why it is reported.",
    "ResolveReportInput.status": "ACTIONED or DISMISSED.",
    "SignUpInput.email": "An e-mail address; a verification code is mailed to it.",
    "UnregisterDeviceInput.token": "The device token registered before.",
    "UpdateProfileInput.displayName": "The new display name, 1 to 50 code points (after NFC).",
    "UpdateProfileInput.bio": "The new bio, 0 to 150 code points (after NFC).",
    "AvatarUploadStatus.PROCESSING": "The worker is still making its variants.",
    "AvatarUploadStatus.FAILED": "Its bytes were refused (`failureReason` says why).",
    # Fields
    "Avatar.blurhash": "A BlurHash placeholder to show while it loads.",
    "Avatar.variants": "The sizes to show it in.",
    "PendingAvatar.failureReason": "Why it failed (null while processing).",
    "PendingAvatar.status": "PROCESSING or FAILED.",
    "PendingAvatar.uploadId": "The upload you chose as your avatar.",
    "AccountPendingDeletionError.deletionDueAt": "When the account's data is purged.",
    "AddCommentSuccess.comment": "The new comment.",
    "ApproveFollowRequestSuccess.user": "The account that follows you now.",
    "BanUserSuccess.banned": "False when the account was banned already.",
    "BanUserSuccess.bannedUserId": "The global id of the banned account.",
    "BanUserSuccess.resolvedReports": "How many open reports of it were closed as ACTIONED.",
    "BlockSuccess.user": "The account you blocked.",
    "BlockedUserEdge.blockedAt": "When you blocked the account.",
    "CancelAccountDeletionSuccess.user": "Your account, restored.",
    "ChangeEmailSuccess.user": "Your account, with its new address.",
    "ChangePasswordSuccess.endedSessions": "How many of your other sessions ended.",
    "Comment.body": "The text (1 to 2,200 code points).",
    "Comment.createdAt": "When it was written (RFC 3339, UTC).",
    "CreateMediaUploadSuccess.upload": "Where and how to send the bytes.",
    "CreatePostSuccess.post": "The new post (PROCESSING while its media are processed).",
    "DataExport.readyAt": "When the archive was ready (null before).",
    "DataExport.requestedAt": "When you asked for it.",
    "DataExport.status": "PENDING or READY.",
    "DeleteAccountSuccess.deletionDueAt": "When the account's data is purged, unless cancelled.",
    "DeleteCommentSuccess.deletedCommentId": "The global id of the deleted comment.",
    "DeleteCommentSuccess.deletedCount": "How many comments went: it and its replies.",
    "DeletePostSuccess.deletedPostId": "The global id of the deleted post.",
    "Device.platform": "IOS, ANDROID or WEB.",
    "Device.token": "The push token.",
    "EditPostSuccess.post": "The post with its new caption.",
    "EditWindowClosedError.editableUntil": "When the post stopped being editable.",
    "EmailTakenError.field": "The input field at fault: `email`.",
    "ExportMyDataSuccess.export": "The export, PENDING until its archive is ready.",
    "FollowRequestEdge.requestedAt": "When the request was made.",
    "FollowRequestedSuccess.user": "The private account you asked to follow.",
    "FollowSuccess.user": "The account you follow now, with its new counts.",
    "Hashtag.name": "The tag without `#`, folded (NFKC + casefold).",
    "HttpHeader.name": "The header's name.",
    "HttpHeader.value": "The header's value.",
    "LikeEdge.likedAt": "When the like was given.",
    "LikePostSuccess.post": "The post, with its new `likeCount`.",
    "LogInSuccess.user": "Your account.",
    "LogOutSuccess.revokedSessions": "How many sessions ended now (the old name).",
    "MarkNotificationsReadSuccess.unreadNotificationCount": "Your unread notifications now.",
    "Media.altText": "The text alternative for people who cannot see it.",
    "Media.blurhash": "A BlurHash placeholder to show while it loads.",
    "Media.durationSeconds": "A video's length (null for an image).",
    "Media.height": "Height in pixels of the original (null until processed).",
    "Media.kind": "IMAGE or VIDEO.",
    "Media.mimeType": "The original's media type, e.g. image/jpeg.",
    "Media.variants": "The sizes to show it in (thumbnail, feed, full, …).",
    "Media.width": "Width in pixels of the original (null until processed).",
    "MediaUpload.expiresAt": "Until when the target accepts the bytes.",
    "MediaUpload.fields": "Form fields to send before the file (a POST form; empty otherwise).",
    "MediaUpload.headers": "Headers to send exactly as given.",
    "MediaUpload.id": "The upload's id, for createPost's `uploadIds`.",
    "MediaUpload.method": "The HTTP method to send the bytes with.",
    "MediaUpload.url": "Where to send the bytes.",
    "MediaUrlNotAllowedError.url": "The URL refused.",
    "MediaVariant.height": "Height in pixels.",
    "MediaVariant.mimeType": "Its media type, e.g. image/webp.",
    "MediaVariant.url": "Where to fetch it.",
    "MediaVariant.width": "Width in pixels.",
    "MuteSuccess.user": "The account you muted.",
    "MutedUserEdge.mutedAt": "When you muted the account.",
    "Notification.createdAt": "When it happened (the latest event for a grouped one).",
    "Notification.kind": "What happened.",
    "Notification.read": "Whether you marked it read.",
    "Post.caption": "The text (0 to 2,200 code points).",
    "Post.createdAt": "When it was posted (RFC 3339, UTC).",
    "PostEngagement.post": "The post whose counts changed.",
    "PostRevision.caption": "The caption as it was.",
    "PostRevision.replacedAt": "When an edit replaced it.",
    "PostRevision.writtenAt": "When it was written.",
    "RefreshSessionSuccess.user": "Your account.",
    "RegisterDeviceSuccess.device": "The device as registered.",
    "RejectFollowRequestSuccess.user": "The account whose request you turned down.",
    "RemovePostSuccess.removed": "False when the post was removed already.",
    "RemovePostSuccess.removedPostId": "The global id of the removed post.",
    "RemovePostSuccess.resolvedReports": "How many open reports of it were closed as ACTIONED.",
    "Report.createdAt": "When it was reported.",
    "Report.note": "The reporter's words (may be empty).",
    "Report.reason": "Why it was reported.",
    "Report.resolvedAt": "When a moderator closed it (null while open).",
    "Report.status": "OPEN, ACTIONED or DISMISSED.",
    "Report.subject": "POST or USER.",
    "ReportSuccess.note": "Your words, as stored.",
    "ReportSuccess.reason": "The reason, as stored.",
    "ReportSuccess.reportId": "The report's global id.",
    "RequestEmailVerificationSuccess.email": "The address the code was mailed to.",
    "RequestPasswordResetSuccess.message": "What to tell the person, the same whoever asked.",
    "ResetPasswordSuccess.endedSessions": "How many sessions of the account ended.",
    "ResolveReportSuccess.report": "The report, closed.",
    "SignUpSuccess.user": "Your new account.",
    "TooManyMailsError.retryAfterSeconds": "Seconds until another mail may be sent.",
    "TrendingHashtag.hashtag": "The tag, to read its posts.",
    "TrendingHashtag.name": "The tag without `#`.",
    "UnblockSuccess.user": "The account you unblocked.",
    "UnfollowSuccess.user": "The account you no longer follow, with its new counts.",
    "UnlikePostSuccess.post": "The post, with its new `likeCount`.",
    "UnmuteSuccess.user": "The account you unmuted.",
    "UpdateProfileSuccess.user": "Your account as it is now.",
    "UploadNotFoundError.index": "Its position in `uploadIds` (0-based).",
    "UploadUnusableError.index": "Its position in `uploadIds` (0-based).",
    "UploadUnusableError.reason": "Why it cannot be used.",
    "User.bio": "0 to 150 code points.",
    "User.createdAt": "When the account was made (RFC 3339, UTC).",
    "User.displayName": "The name shown, 1 to 50 code points.",
    "UsernameTakenError.field": "The input field at fault: `username`.",
    "ValidationError.field": "The input field at fault, e.g. `caption`.",
    "VerifyEmailSuccess.user": "Your account, its address verified.",
    "WrongPasswordError.field": "The input field at fault, e.g. `currentPassword`.",
}
