package bot

// The Slack Web API methods slackbot calls, as Metrics.SlackError and
// the Slack client's spans and metrics name them.
const (
	MethodPostMessage          = "chat.postMessage"
	MethodUpdate               = "chat.update"
	MethodPostEphemeral        = "chat.postEphemeral"
	MethodGetPermalink         = "chat.getPermalink"
	MethodViewsOpen            = "views.open"
	MethodViewsPublish         = "views.publish"
	MethodConversationsHistory = "conversations.history"
	MethodConversationsReplies = "conversations.replies"
	MethodUsergroupsUsersList  = "usergroups.users.list"
	MethodAuthTest             = "auth.test"
)

// SlackMethods lists every method above: metrics start a series at zero
// for each, so an alert on a method's errors or rate limits has a series
// before Slack first refuses it.
var SlackMethods = []string{
	MethodPostMessage, MethodUpdate, MethodPostEphemeral, MethodGetPermalink,
	MethodViewsOpen, MethodViewsPublish, MethodConversationsHistory,
	MethodConversationsReplies, MethodUsergroupsUsersList, MethodAuthTest,
}
