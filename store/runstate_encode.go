package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// How a saved run state (RunState) is kept in Redis: its JSON, compressed
// with zstd against a built-in dictionary once it is at least
// runStateCompressMin bytes (smaller ones do not pay for the frame header)
// and at most runStateMaxBytes. A stored value that starts with zstd's
// frame magic is compressed; anything else is JSON as the previous
// versions wrote it, so their states still load. A replica of a previous
// version cannot read a compressed state: LoadRun fails there, the resume
// job stays queued, and a replica of this version resumes the run.
//
// The model's messages repeat their field names, part kinds, run id and
// timestamps; the dictionary holds that boilerplate, which takes a
// 2.3 KB state with a 200 B tool call to about 600 B (zstd alone: 790 B).
const (
	runStateCompressMin = 256
	// runStateMaxBytes bounds what decompressing a state may produce, so
	// a corrupt or hostile value cannot take more memory than that; a
	// larger state is stored as plain JSON.
	runStateMaxBytes = 16 << 20
)

// runStateDictID names runStateDict in the frames compressed with it. The
// dictionary's content must never change under its id: a changed
// dictionary gets a new id, and the decoder keeps every earlier one
// (TestRunStateDictPinned holds the content to its id). It is above
// 32767, the ids zstd reserves for public dictionaries.
const runStateDictID = 0x8001

// runStateDict is the raw-content dictionary of runStateDictID: a run
// state's JSON with the values left out, most common strings last.
const runStateDict = `{"calls":[],"approvals":[],"metadata":{}}` +
	`"origin":{"TeamID":"T","Channel":"C","ThreadTS":"1700000000.000000","User":"U","Client":"","Name":""},` +
	`{"part_kind":"system-prompt","content":""},{"part_kind":"retry-prompt","tool_name":"","tool_call_id":"","timestamp":"","content":""},` +
	`{"part_kind":"thinking","content":""},{"part_kind":"tool-return","tool_name":"","tool_call_id":"","outcome":"denied","timestamp":"2026-01-01T00:00:00.000000000Z","content":""},` +
	`"model_name":"claude-sonnet-4-5","model_name":"gpt-4o","expires_at":"2026-01-01T00:00:00.000Z","saved_at":"2026-01-01T00:00:00.000000000Z"}` +
	`{"run_id":"","token":"","messages":[{"kind":"request","parts":[{"part_kind":"user-prompt","timestamp":"2026-01-01T00:00:00.000000000Z","content":""}],"timestamp":"2026-01-01T00:00:00.000000000Z","run_id":""},` +
	`{"kind":"response","parts":[{"part_kind":"text","content":""},{"part_kind":"tool-call","tool_name":"","args":{},"tool_call_id":"toolu_01"}],"timestamp":"2026-01-01T00:00:00.000000000Z","model_name":"","run_id":""},` +
	`{"kind":"request","parts":[{"part_kind":"tool-return","tool_name":"","tool_call_id":"call_","timestamp":"2026-01-01T00:00:00.000000000Z","content":""}],"timestamp":"2026-01-01T00:00:00.000000000Z","run_id":""}],` +
	`"pending":{"calls":[],"approvals":[{"tool_name":"","args":{},"tool_call_id":""}],"metadata":{}},"origin":{"TeamID":"","Channel":"","ThreadTS":"","User":"","Client":""},"expires_at":"","saved_at":""}`

// zstdMagic starts every zstd frame; no JSON text starts with it.
var zstdMagic = []byte{0x28, 0xB5, 0x2F, 0xFD}

// errRunStateCorrupt is LoadRun's error for a compressed state that does
// not decompress (within runStateMaxBytes).
var errRunStateCorrupt = errors.New("corrupt compressed run state")

var (
	// The encoder is the fastest level with a 256 KiB window, at most two
	// at once: about 1.2 MB of heap each once used (the default level and
	// window take 12 MB), for 1% larger states than the default level's.
	runStateEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderDictRaw(runStateDictID, []byte(runStateDict)),
			zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(256<<10), zstd.WithLowerEncoderMem(true),
			zstd.WithEncoderConcurrency(2))
	})
	// runStateDecoders are synchronous stream decoders (no goroutines of
	// their own), one per LoadRun at a time.
	runStateDecoders sync.Pool
)

// encodeRunState returns the value SaveRun stores for rs.
func encodeRunState(rs *RunState) ([]byte, error) {
	b, err := json.Marshal(rs)
	if err != nil {
		return nil, err
	}
	if len(b) < runStateCompressMin || len(b) > runStateMaxBytes {
		return b, nil
	}
	enc, err := runStateEncoder()
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	if z := enc.EncodeAll(b, make([]byte, 0, len(b)/2)); len(z) < len(b) {
		return z, nil
	}
	return b, nil
}

// decodeRunState reads what encodeRunState (or a previous version) stored.
func decodeRunState(b []byte) (*RunState, error) {
	if bytes.HasPrefix(b, zstdMagic) {
		var err error
		if b, err = decompressRunState(b); err != nil {
			return nil, fmt.Errorf("%w: %w", errRunStateCorrupt, err)
		}
	}
	var rs RunState
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, err
	}
	return &rs, nil
}

// decompressRunState decompresses the frame encodeRunState wrote: one
// frame that says how large its content is. It reads no more than that
// size, so a hostile value (a frame of unknown size, frames one after the
// other, a frame larger than it says) costs at most runStateMaxBytes.
func decompressRunState(b []byte) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return nil, err
	}
	if !h.HasFCS || h.FrameContentSize > runStateMaxBytes {
		return nil, fmt.Errorf("the frame does not say its size, or it is over %d bytes", runStateMaxBytes)
	}
	dec, _ := runStateDecoders.Get().(*zstd.Decoder)
	if dec == nil {
		var err error
		if dec, err = zstd.NewReader(nil, zstd.WithDecoderDictRaw(runStateDictID, []byte(runStateDict)),
			zstd.WithDecoderMaxMemory(runStateMaxBytes), zstd.WithDecoderMaxWindow(runStateMaxBytes),
			zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true)); err != nil {
			return nil, fmt.Errorf("zstd decoder: %w", err)
		}
	}
	defer runStateDecoders.Put(dec)
	if err := dec.Reset(bytes.NewReader(b)); err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(make([]byte, 0, h.FrameContentSize))
	n, err := io.Copy(out, io.LimitReader(dec, int64(h.FrameContentSize)+1))
	if err != nil {
		return nil, err
	}
	if uint64(n) != h.FrameContentSize {
		return nil, fmt.Errorf("%d bytes decoded, the frame says %d", n, h.FrameContentSize)
	}
	return out.Bytes(), nil
}
