"""The root Mutation type, assembled from one class per area."""

from __future__ import annotations

import strawberry

from resolvers.accounts import AccountMutations
from resolvers.devices import DeviceMutations
from resolvers.email import EmailMutations
from resolvers.engagement import EngagementMutations
from resolvers.identity import IdentityMutations
from resolvers.media import MediaMutations
from resolvers.moderation import ModerationMutations
from resolvers.mutes import MuteMutations
from resolvers.notifications import NotificationMutations
from resolvers.posts import PostMutations
from resolvers.social import SocialMutations


@strawberry.type
class Mutation(
    IdentityMutations,
    SocialMutations,
    PostMutations,
    MediaMutations,
    EngagementMutations,
    NotificationMutations,
    DeviceMutations,
    AccountMutations,
    EmailMutations,
    MuteMutations,
    ModerationMutations,
):
    pass
