package windowing

import (
	"github.com/weirstream/weir/state"

	istate "github.com/weirstream/weir/internal/state"
)

// Schemas of the window operators' own codecs (istate.SchemaCodec): a
// snapshot records what they wrap, so a restore resolves the user's
// accumulator type by the same rules as any state, and windows (which
// are namespaces) must not change.

const (
	mergeSetSchema  = "weir.merging-window-set"
	sliceListSchema = "weir.window-slices"
)

// Schema implements istate.SchemaCodec.
func (c mergeSetCodec[W]) Schema() string {
	return istate.WrapSchema(mergeSetSchema, istate.SchemaOf(c.w))
}

// ReaderFor implements istate.SchemaCodec: the window type must be the same.
func (c mergeSetCodec[W]) ReaderFor(old string) (state.Codec[*mergeSet[W]], error) {
	inner, err := istate.UnwrapSchema(mergeSetSchema, old)
	if err != nil {
		return nil, err
	}
	if err := istate.CheckExact("window", inner, istate.SchemaOf(c.w)); err != nil {
		return nil, err
	}
	return c, nil
}

// Schema implements istate.SchemaCodec.
func (c sliceListCodec[ACC]) Schema() string {
	return istate.WrapSchema(sliceListSchema, istate.SchemaOf(c.acc))
}

// ReaderFor implements istate.SchemaCodec: the accumulator is resolved as
// any state's value.
func (c sliceListCodec[ACC]) ReaderFor(old string) (state.Codec[*sliceList[ACC]], error) {
	inner, err := istate.UnwrapSchema(sliceListSchema, old)
	if err != nil {
		return nil, err
	}
	r, err := istate.ReaderFor(c.acc, inner)
	if err != nil {
		return nil, err
	}
	return sliceListCodec[ACC]{acc: r}, nil
}
