package prompt

import (
	"fmt"
	"strings"

	"github.com/cadre-ai/cadre"
)

// A QA is one question of an onboarding conversation and its answer.
type QA struct {
	Question, Answer string
}

// Onboarding is the first user message of a child started in onboarding
// mode: its caller means to give it a task later and lets it ask questions
// first. The child may call ask_caller(question), one question at a time,
// at most maxQuestions times (cadre.DefaultMaxQuestions when maxQuestions
// <= 0); ending its turn without asking means it is ready. The caller's
// context, trimmed, closes the message when it is not blank.
func Onboarding(context string, maxQuestions int) string {
	if maxQuestions <= 0 {
		maxQuestions = cadre.DefaultMaxQuestions
	}
	plural := "s"
	if maxQuestions == 1 {
		plural = ""
	}
	msg := fmt.Sprintf(`Onboarding: your caller will give you a task shortly. Before that, you may ask it questions to understand what it needs.
- Call ask_caller(question) with one question at a time and wait for the answer before asking the next.
- Ask at most %d question%s, and only what you cannot find out yourself and what changes how you will do the work.
- When you have what you need, end your turn without calling ask_caller: that tells your caller you are ready. Do not start the work yet.`,
		maxQuestions, plural)
	if context = strings.TrimSpace(context); context != "" {
		msg += "\n\nWhat your caller told you so far:\n" + context
	}
	return msg
}

// OnboardedTask is the first user message of a call made with an onboarding
// handle: "Onboarding:\n", then for each exchange "Q: question\nA: answer\n\n"
// (both trimmed), then UserMessage(task, context). Without exchanges it is
// UserMessage(task, context) alone.
func OnboardedTask(qa []QA, task, context string) string {
	if len(qa) == 0 {
		return UserMessage(task, context)
	}
	var b strings.Builder
	b.WriteString("Onboarding:\n")
	for _, x := range qa {
		b.WriteString("Q: ")
		b.WriteString(strings.TrimSpace(x.Question))
		b.WriteString("\nA: ")
		b.WriteString(strings.TrimSpace(x.Answer))
		b.WriteString("\n\n")
	}
	b.WriteString(UserMessage(task, context))
	return b.String()
}
