package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/clock"
)

func TestMailboxRunsInOrderAndDropsAfterClose(t *testing.T) {
	task := NewTask("t", 0, clock.NewManual(0))
	var ran []int
	for i := range 3 {
		if !task.Mailbox().Post(func() error {
			ran = append(ran, i)
			if i == 1 {
				task.Mailbox().Post(func() error { ran = append(ran, 9); return nil })
			}
			return nil
		}) {
			t.Fatal("post refused")
		}
	}
	if n, err := task.RunMail(); err != nil || n != 3 || !slices.Equal(ran, []int{0, 1, 2}) {
		t.Fatalf("ran %v (%d, %v)", ran, n, err)
	}
	if n, _ := task.RunMail(); n != 1 || ran[3] != 9 {
		t.Fatalf("a mail posted by a mail ran %d later: %v", n, ran)
	}
	task.Mailbox().Post(func() error { return errors.New("boom") })
	if _, err := task.RunMail(); err == nil {
		t.Fatal("a failing mail's error was lost")
	}
	task.mail.close()
	if task.Mailbox().Post(func() error { return nil }) {
		t.Fatal("posted after close")
	}
}
