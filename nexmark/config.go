package nexmark

import (
	"fmt"
	"math"
	"time"
)

// Defaults of Config, those of nexmark/nexmark's NexmarkConfiguration.
const (
	DefaultRate                = 10_000 // first-event.rate, events per second of event time
	DefaultPersonProportion    = 1
	DefaultAuctionProportion   = 3
	DefaultBidProportion       = 46
	DefaultAvgPersonByteSize   = 200
	DefaultAvgAuctionByteSize  = 500
	DefaultAvgBidByteSize      = 100
	DefaultHotAuctionRatio     = 2
	DefaultHotSellersRatio     = 4
	DefaultHotBiddersRatio     = 4
	DefaultNumActivePeople     = 1000
	DefaultNumInFlightAuctions = 100
	DefaultOutOfOrderGroupSize = 1
	// DefaultWatermarkDelay is the bounded out-of-orderness of the Nexmark
	// table's watermark (`dateTime - INTERVAL '4' SECOND`).
	DefaultWatermarkDelay = 4 * time.Second
	// DefaultBaseTime is the event time of event number 0, in ms
	// (2015-07-15T00:00:00Z, Beam's Nexmark base time). Flink's generator
	// takes the wall clock at start instead; a fixed base keeps runs equal.
	DefaultBaseTime = 1436918400000
)

// Id constants of the generator.
const (
	FirstPersonID   = 1000 // the first person's id
	FirstAuctionID  = 1000 // the first auction's id
	FirstCategoryID = 10   // categories are 10..14
	NumCategories   = 5

	personIDLead    = 10 // ids ahead of the last person that bids and auctions may name
	auctionIDLead   = 10
	hotSellerBatch  = 100
	hotBidderBatch  = 100
	hotAuctionBatch = 100
)

// Config configures the generator. A zero field takes its default (the
// Default* constants), so Config{Events: 1_000_000} is a valid config.
type Config struct {
	// Events is the total number of events over all generators; 0 means
	// unbounded (as Flink's events.num = 0).
	Events int64
	// Rate is the event rate in events per second of event time over all
	// generators (Flink's first-event.rate). It only spaces the synthetic
	// timestamps: the source emits as fast as it can (Flink's
	// max-emit-speed).
	Rate float64
	// Generators is the number of generators (source splits); 0 means one
	// per source subtask, as Flink's numEventGenerators = parallelism. The
	// timestamps and ids depend on it.
	Generators int
	// Seed seeds the generators' random number generators; generator i of
	// n uses a seed derived from (Seed, i).
	Seed uint64
	// BaseTime is the event time of event number 0, in ms.
	BaseTime int64
	// WatermarkDelay is the bounded out-of-orderness of the source's
	// watermarks.
	WatermarkDelay time.Duration

	PersonProportion  int
	AuctionProportion int
	BidProportion     int

	AvgPersonByteSize  int
	AvgAuctionByteSize int
	AvgBidByteSize     int

	// HotAuctionRatio: a bid goes to the current hot auction with
	// probability 1 - 1/HotAuctionRatio.
	HotAuctionRatio int
	// HotSellersRatio: an auction's seller is the current hot seller with
	// probability 1 - 1/HotSellersRatio.
	HotSellersRatio int
	// HotBiddersRatio: a bid's bidder is the current hot bidder with
	// probability 1 - 1/HotBiddersRatio.
	HotBiddersRatio int

	// NumActivePeople is how many recent people may sell or bid.
	NumActivePeople int
	// NumInFlightAuctions is how many recent auctions may receive bids; it
	// also sets the mean auction length.
	NumInFlightAuctions int
	// OutOfOrderGroupSize permutes event numbers within groups of this size
	// (1: in order, as Flink, which exposes no option for it).
	OutOfOrderGroupSize int

	// DoubleBidderOffset reproduces the Flink generator's bug that adds
	// FirstPersonID twice to a bid's bidder (nexmark/nexmark#30): bidder ids
	// are then person ids + 1000. Off by default (bidders are persons).
	DoubleBidderOffset bool
}

// DefaultConfig returns the defaults with every field filled in, for the
// given total number of events (0: unbounded).
func DefaultConfig(events int64) Config {
	return Config{Events: events}.withDefaults()
}

func orInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// withDefaults fills zero fields with their defaults.
func (c Config) withDefaults() Config {
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.BaseTime == 0 {
		c.BaseTime = DefaultBaseTime
	}
	if c.WatermarkDelay == 0 {
		c.WatermarkDelay = DefaultWatermarkDelay
	}
	c.PersonProportion = orInt(c.PersonProportion, DefaultPersonProportion)
	c.AuctionProportion = orInt(c.AuctionProportion, DefaultAuctionProportion)
	c.BidProportion = orInt(c.BidProportion, DefaultBidProportion)
	c.AvgPersonByteSize = orInt(c.AvgPersonByteSize, DefaultAvgPersonByteSize)
	c.AvgAuctionByteSize = orInt(c.AvgAuctionByteSize, DefaultAvgAuctionByteSize)
	c.AvgBidByteSize = orInt(c.AvgBidByteSize, DefaultAvgBidByteSize)
	c.HotAuctionRatio = orInt(c.HotAuctionRatio, DefaultHotAuctionRatio)
	c.HotSellersRatio = orInt(c.HotSellersRatio, DefaultHotSellersRatio)
	c.HotBiddersRatio = orInt(c.HotBiddersRatio, DefaultHotBiddersRatio)
	c.NumActivePeople = orInt(c.NumActivePeople, DefaultNumActivePeople)
	c.NumInFlightAuctions = orInt(c.NumInFlightAuctions, DefaultNumInFlightAuctions)
	c.OutOfOrderGroupSize = orInt(c.OutOfOrderGroupSize, DefaultOutOfOrderGroupSize)
	return c
}

// Validate reports the first invalid setting (after defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Events < 0:
		return fmt.Errorf("nexmark: events must not be negative, got %d", c.Events)
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("nexmark: rate must be positive, got %v", c.Rate)
	case c.Generators < 0:
		return fmt.Errorf("nexmark: generators must not be negative, got %d", c.Generators)
	case c.WatermarkDelay < 0:
		return fmt.Errorf("nexmark: watermark delay must not be negative, got %v", c.WatermarkDelay)
	case c.PersonProportion < 0 || c.AuctionProportion < 0 || c.BidProportion < 0:
		return fmt.Errorf("nexmark: proportions must be positive, got %d:%d:%d", c.PersonProportion, c.AuctionProportion, c.BidProportion)
	case c.AvgPersonByteSize < 0 || c.AvgAuctionByteSize < 0 || c.AvgBidByteSize < 0:
		return fmt.Errorf("nexmark: average sizes must be positive")
	case c.HotAuctionRatio < 0 || c.HotSellersRatio < 0 || c.HotBiddersRatio < 0:
		return fmt.Errorf("nexmark: hot ratios must be positive")
	case c.NumActivePeople < 0 || c.NumInFlightAuctions < 0 || c.OutOfOrderGroupSize < 0:
		return fmt.Errorf("nexmark: active people, in-flight auctions and out-of-order group size must be positive")
	}
	return nil
}

// totalProportion is person + auction + bid proportion.
func (c Config) totalProportion() int64 {
	return int64(c.PersonProportion + c.AuctionProportion + c.BidProportion)
}

// maxEvents is Events, or for an unbounded config the bound Flink uses.
func (c Config) maxEvents() int64 {
	if c.Events > 0 {
		return c.Events
	}
	return math.MaxInt64 / (c.totalProportion() * int64(max(c.AvgPersonByteSize, c.AvgAuctionByteSize, c.AvgBidByteSize)))
}
