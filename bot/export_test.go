package bot

// StubStore and ApplyDecision are stubStore and applyDecision for the
// tests of package bot_test.
type StubStore = stubStore

// ApplyDecision is applyDecision.
var ApplyDecision = applyDecision
