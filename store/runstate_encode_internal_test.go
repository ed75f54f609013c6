package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/slackapprove/slackbot/agentrunner"
)

// The dictionary's content is pinned to its id: frames already in Redis
// name the id, so editing the content under the same id would make them
// decode wrong. Change the dictionary only with a new id, keeping the old
// one in the decoder.
func TestRunStateDictPinned(t *testing.T) {
	sum := sha256.Sum256([]byte(runStateDict))
	const want = "276f0d71bd9bce85138d4ef80f668cc3145b40e038694ce69e53353818edc624"
	if got := hex.EncodeToString(sum[:]); runStateDictID != 0x8001 || got != want {
		t.Fatalf("dictionary %#x has sha256 %s, pinned %s: a changed dictionary needs a new id", runStateDictID, got, want)
	}
}

// A frame that decompresses to more than runStateMaxBytes is refused,
// whether its header says how large it is or not, without decompressing
// more than the cap.
func TestRunStateDecompressionBounded(t *testing.T) {
	huge := make([]byte, runStateMaxBytes+1<<20) // zeros: a few bytes compressed
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	withSize := enc.EncodeAll(huge, nil)
	var stream bytes.Buffer
	w, err := zstd.NewWriter(&stream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(huge); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Frames of 1 MiB each, one after the other: each within the cap, all
	// of them over it.
	var frames []byte
	for range runStateMaxBytes>>20 + 2 {
		frames = enc.EncodeAll(huge[:1<<20], frames)
	}
	for name, frame := range map[string][]byte{
		"content size in the header": withSize, "streamed, no content size": stream.Bytes(), "many frames": frames,
	} {
		if len(frame) > 64<<10 {
			t.Fatalf("%s: the bomb is %d B, not a bomb", name, len(frame))
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := decodeRunState(frame)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, errRunStateCorrupt) {
			t.Errorf("%s: got %v, want %v", name, err, errRunStateCorrupt)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > runStateMaxBytes+1<<20 {
			t.Errorf("%s: decoding allocated %d MB, want at most the %d MB cap", name, alloc>>20, runStateMaxBytes>>20)
		}
	}
}

// A frame compressed with another dictionary is an error, not garbage.
func TestRunStateUnknownDict(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderDictRaw(0x9999, []byte(`{"other":"dictionary"}`)))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll([]byte(`{"run_id":"r","token":"t","messages":[],"pending":{}}`), nil)
	if _, err := decodeRunState(frame); !errors.Is(err, errRunStateCorrupt) {
		t.Errorf("got %v, want %v", err, errRunStateCorrupt)
	}
}

// The encoder's heap stays small: it is held for the process's life.
func TestRunStateEncoderHeap(t *testing.T) {
	rs := &RunState{RunID: "run-1", Token: "t", Origin: []byte(`{"TeamID":"T0","Channel":"C0","ThreadTS":"1.2","User":"U0","Client":""}`)}
	rs.Messages = make([]agentrunner.Message, 20)
	for i := range rs.Messages {
		rs.Messages[i] = agentrunner.Message{Kind: agentrunner.KindRequest, RunID: "run-1", Parts: []agentrunner.Part{agentrunner.UserPrompt(strings.Repeat("clean up the reports ", 5))}}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := encodeRunState(rs); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Errorf("the run state encoder holds %d KB of heap, want at most 4 MB", grew>>10)
	}
}
