package nexmark

// splitRand is a port of java.util.SplittableRandom's algorithm (SplitMix64
// with a fixed gamma for a seeded instance): the Flink generator's RNG, so
// bounded draws (rejection sampling in nextInt(bound)) have its exact
// distributions. Unlike Flink's, it is always seeded.
//
// A seeded SplittableRandom always steps by the golden gamma, so the gamma
// is a constant here: the step is an add of an immediate, and loops that
// draw many values (randString) keep the seed in a register.
type splitRand struct {
	seed uint64
}

const goldenGamma = 0x9e3779b97f4a7c15

func newSplitRand(seed uint64) splitRand { return splitRand{seed: seed} }

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func mix32(z uint64) int32 {
	z = (z ^ (z >> 33)) * 0x62a9d9ed799705f5
	return int32(((z ^ (z >> 28)) * 0xcb24d0a5c88c35b3) >> 32)
}

func (r *splitRand) nextSeed() uint64 {
	r.seed += goldenGamma
	return r.seed
}

// nextInt returns a uniform int32 (SplittableRandom.nextInt()).
func (r *splitRand) nextInt() int32 { return mix32(r.nextSeed()) }

// intn returns a uniform value in [0, bound) for bound > 0
// (SplittableRandom.nextInt(bound)).
func (r *splitRand) intn(bound int32) int32 {
	v := mix32(r.nextSeed())
	m := bound - 1
	if bound&m == 0 {
		return v & m
	}
	for u := int32(uint32(v) >> 1); ; u = int32(uint32(mix32(r.nextSeed())) >> 1) {
		v = u % bound
		if u+m-v >= 0 { // int32 overflow rejects the over-represented tail
			return v
		}
	}
}

// draw13 and draw26 are intn(13) and intn(26) on a seed held by the
// caller (seed is the state before the draw; the new state is returned),
// with constant divisors, which the compiler turns into multiplications:
// the per-character draws of random strings, whose loops keep the seed in
// a register rather than in the generator.
func draw13(seed uint64) (int32, uint64) {
	for {
		seed += goldenGamma
		u := int32(uint32(mix32(seed)) >> 1)
		if v := u % 13; u+12-v >= 0 {
			return v, seed
		}
	}
}

func draw26(seed uint64) (int32, uint64) {
	for {
		seed += goldenGamma
		u := int32(uint32(mix32(seed)) >> 1)
		if v := u % 26; u+25-v >= 0 {
			return v, seed
		}
	}
}

// nextLong returns a uniform int64 (SplittableRandom.nextLong()).
func (r *splitRand) nextLong() int64 { return int64(mix64(r.nextSeed())) }

// nextDouble returns a uniform value in [0, 1) (SplittableRandom.nextDouble()).
func (r *splitRand) nextDouble() float64 {
	return float64(mix64(r.nextSeed())>>11) * (1.0 / (1 << 53))
}

// longn returns a value in [0, n) as the generator's LongGenerator.nextLong:
// an int draw when n fits, else |nextLong % n| (skewed, as the original).
func (r *splitRand) longn(n int64) int64 {
	if n < 1<<31-1 {
		return int64(r.intn(int32(n)))
	}
	v := r.nextLong() % n
	if v < 0 {
		v = -v
	}
	return v
}
