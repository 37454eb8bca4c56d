package nexmark

import "math"

// Prices are 10^(u*6) * 100 rounded, u uniform in [0, 1). The Flink
// generator uses Math.pow, whose last bit differs between JVMs and from Go's
// math.Pow; pow10Frac is defined by IEEE-754 double operations only (a
// table of correctly rounded constants, a short polynomial, each operation
// rounded on its own: the float64 conversions forbid fused multiply-adds),
// so a port to another language that performs the same operations gets
// the same prices bit for bit. It is also several times faster than
// math.Pow.

// pow10Frac256[j] is 10^(j/256), correctly rounded.
var pow10Frac256 = [256]float64{
	0x1.0000000000000p+0, 0x1.02501ee61ca62p+0, 0x1.04a5975b254b9p+0, 0x1.070075bed9bfcp+0,
	0x1.0960c68d98bc3p+0, 0x1.0bc69660a2173p+0, 0x1.0e31f1ee598ffp+0, 0x1.10a2e60a8a353p+0,
	0x1.13197fa6aa677p+0, 0x1.1595cbd220791p+0, 0x1.1817d7ba87ec7p+0, 0x1.1a9fb0abf752ep+0,
	0x1.1d2d641146cc9p+0, 0x1.1fc0ff74572c4p+0, 0x1.225a907e59beep+0, 0x1.24fa24f818b96p+0,
	0x1.279fcaca404e6p+0, 0x1.2a4b8ffda86c5p+0, 0x1.2cfd82bb9f26cp+0, 0x1.2fb5b14e33cb5p+0,
	0x1.32742a2082a48p+0, 0x1.3538fbbf016bep+0, 0x1.380434d7cc6cbp+0, 0x1.3ad5e43af4592p+0,
	0x1.3dae18daccd3ep+0, 0x1.408ce1cc3baecp+0, 0x1.43724e4708e10p+0, 0x1.465e6da62f36ap+0,
	0x1.49514f682db9fp+0, 0x1.4c4b032f59d9ep+0, 0x1.4f4b98c2324dfp+0, 0x1.5253200bb2ba2p+0,
	0x1.5561a91ba8144p+0, 0x1.5877442705cc6p+0, 0x1.5b9401883bba3p+0, 0x1.5eb7f1bf8cd17p+0,
	0x1.61e32573669e7p+0, 0x1.6515ad70b98d7p+0, 0x1.684f9aab51fdbp+0, 0x1.6b90fe3e3222fp+0,
	0x1.6ed9e96becb66p+0, 0x1.722a6d9f007a1p+0, 0x1.75829c6a348f3p+0, 0x1.78e28788f5a26p+0,
	0x1.7c4a40dfb3efap+0, 0x1.7fb9da7c421f3p+0, 0x1.8331669634fe5p+0, 0x1.86b0f78f44155p+0,
	0x1.8a389ff3ab1cfp+0, 0x1.8dc8727a8c54fp+0, 0x1.9160820653becp+0, 0x1.9500e1a51b3d0p+0,
	0x1.98a9a4910f9b1p+0, 0x1.9c5ade30d67dcp+0, 0x1.a014a217f540bp+0, 0x1.a3d7040738c09p+0,
	0x1.a7a217ed1e165p+0, 0x1.ab75f1e63c43dp+0, 0x1.af52a63daed5dp+0, 0x1.b338496d817bbp+0,
	0x1.b726f01f1c989p+0, 0x1.bb1eaf2bb2cf6p+0, 0x1.bf1f9b9caf8c5p+0, 0x1.c329caac268e1p+0,
	0x1.c73d51c54470ep+0, 0x1.cb5a4684c03dfp+0, 0x1.cf80beb94e016p+0, 0x1.d3b0d0641269cp+0,
	0x1.d7ea91b917723p+0, 0x1.dc2e191fc21afp+0, 0x1.e07b7d3349323p+0, 0x1.e4d2d4c32d2f5p+0,
	0x1.e93436d3b1239p+0, 0x1.ed9fba9e54c27p+0, 0x1.f21577924f848p+0, 0x1.f69585550ce6ap+0,
	0x1.fb1ffbc2a9c8cp+0, 0x1.ffb4f2ee72ef0p+0, 0x1.022a4191b2537p+1, 0x1.047f627255ca0p+1,
	0x1.06d9e87713534p+1, 0x1.0939e01a751f2p+1, 0x1.0b9f55f3e23eep+1, 0x1.0e0a56b7e1670p+1,
	0x1.107aef385c4c2p+1, 0x1.12f12c64e39b6p+1, 0x1.156d1b4af3904p+1, 0x1.17eec9163928dp+1,
	0x1.1a764310d7fa1p+1, 0x1.1d0396a3b0a5fp+1, 0x1.1f96d156a7f46p+1, 0x1.223000d0ee902p+1,
	0x1.24cf32d9496aap+1, 0x1.277475565ac64p+1, 0x1.2a1fd64eebea3p+1, 0x1.2cd163ea37808p+1,
	0x1.2f892c7034a03p+1, 0x1.32473e49e2850p+1, 0x1.350ba80194f60p+1, 0x1.37d67843415d7p+1,
	0x1.3aa7bddccc926p+1, 0x1.3d7f87be59568p+1, 0x1.405de4fa97896p+1, 0x1.4342e4c714131p+1,
	0x1.462e967c89878p+1, 0x1.4921099731842p+1, 0x1.4c1a4db716ca3p+1, 0x1.4f1a72a068169p+1,
	0x1.5221883bcbb97p+1, 0x1.552f9e96b3ef2p+1, 0x1.5844c5e3b3fc0p+1, 0x1.5b610e7ad60dap+1,
	0x1.5e8488d9f1e22p+1, 0x1.61af45a50437fp+1, 0x1.64e155a687085p+1, 0x1.681ac9cfca8d5p+1,
	0x1.6b5bb3394f161p+1, 0x1.6ea423231faa8p+1, 0x1.71f42af52d816p+1, 0x1.754bdc3fac48cp+1,
	0x1.78ab48bb6f451p+1, 0x1.7c12824a4746ep+1, 0x1.7f819af7617a3p+1, 0x1.82f8a4f7a710ep+1,
	0x1.8677b2aa1dcadp+1, 0x1.89fed698495cbp+1, 0x1.8d8e23768db89p+1, 0x1.9125ac249239ap+1,
	0x1.94c583ada5b53p+1, 0x1.986dbd4923735p+1, 0x1.9c1e6c5ad9110p+1, 0x1.9fd7a4736d4ddp+1,
	0x1.a3997950c7c75p+1, 0x1.a763fede79a4ep+1, 0x1.ab3749362734fp+1, 0x1.af136c9ff27f1p+1,
	0x1.b2f87d92e6cc1p+1, 0x1.b6e690b565275p+1, 0x1.baddbadd91da9p+1, 0x1.bede1111c2e76p+1,
	0x1.c2e7a888ef7fdp+1, 0x1.c6fa96ab20812p+1, 0x1.cb16f111e1f27p+1, 0x1.cf3ccd88b58a1p+1,
	0x1.d36c420d863bep+1, 0x1.d7a564d11cd27p+1, 0x1.dbe84c3795966p+1, 0x1.e0350ed8d7059p+1,
	0x1.e48bc381099d0p+1, 0x1.e8ec813110b7cp+1, 0x1.ed575f1f04857p+1, 0x1.f1cc74b6ad1acp+1,
	0x1.f64bd999fe9ecp+1, 0x1.fad5a5a196977p+1, 0x1.ff69f0dd3a57cp+1, 0x1.020469ca2b494p+2,
	0x1.04593323400a0p+2, 0x1.06b360d5fad2fp+2, 0x1.0912ff5b118f2p+2, 0x1.0b781b4812cffp+2,
	0x1.0de2c14fa8852p+2, 0x1.1052fe41db4fdp+2, 0x1.12c8df0c5670fp+2, 0x1.154470baac550p+2,
	0x1.17c5c0769bbe2p+2, 0x1.1a4cdb88558e5p+2, 0x1.1cd9cf56c3330p+2, 0x1.1f6ca967cdb38p+2,
	0x1.22057760a5640p+2, 0x1.24a447060a3dep+2, 0x1.2749263c94e00p+2, 0x1.29f4230900376p+2,
	0x1.2ca54b9073d27p+2, 0x1.2f5cae18cee05p+2, 0x1.321a5908f3dd1p+2, 0x1.34de5ae914edap+2,
	0x1.37a8c26300ebcp+2, 0x1.3a799e427124ep+2, 0x1.3d50fd7557cbep+2, 0x1.402eef0c2f213p+2,
	0x1.4313823a49515p+2, 0x1.45fec656210c8p+2, 0x1.48f0cad9aad8bp+2, 0x1.4be99f62a71f6p+2,
	0x1.4ee953b2f4f99p+2, 0x1.51eff7b0e5bb2p+2, 0x1.54fd9b67913f3p+2, 0x1.58124f072af7ep+2,
	0x1.5b2e22e557c27p+2, 0x1.5e51277d8481fp+2, 0x1.617b6d713d82dp+2, 0x1.64ad058886a79p+2,
	0x1.67e600b234626p+2, 0x1.6b267004457bcp+2, 0x1.6e6e64bc3da97p+2, 0x1.71bdf03f80f68p+2,
	0x1.7515241baffecp+2, 0x1.7874120704ffep+2, 0x1.7bdacbe0b1c18p+2, 0x1.7f4963b13e568p+2,
	0x1.82bfebaae8b9dp+2, 0x1.863e762a0547cp+2, 0x1.89c515b560173p+2, 0x1.8d53dcfe9f334p+2,
	0x1.90eadee2a5b8dp+2, 0x1.948a2e69f7d8cp+2, 0x1.9831dec91fc1bp+2, 0x1.9be2036113734p+2,
	0x1.9f9aafbf9b7cbp+2, 0x1.a35bf79fbaa94p+2, 0x1.a725eeea169c5p+2, 0x1.aaf8a9b5615f8p+2,
	0x1.aed43c46c3e4bp+2, 0x1.b2b8bb12497f0p+2, 0x1.b6a63abb4c538p+2, 0x1.ba9cd014e2c5ap+2,
	0x1.be9c90224ddfdp+2, 0x1.c2a5901768bc7p+2, 0x1.c6b7e55918ef7p+2, 0x1.cad3a57dbff4dp+2,
	0x1.cef8e64dada51p+2, 0x1.d327bdc393b25p+2, 0x1.d760420cfa30dp+2, 0x1.dba2898ab52ccp+2,
	0x1.dfeeaad15b500p+2, 0x1.e444bca9bd9acp+2, 0x1.e8a4d61160307p+2, 0x1.ed0f0e3af43c6p+2,
	0x1.f1837c8ed2f09p+2, 0x1.f60238ab79a04p+2, 0x1.fa8b5a6606fa9p+2, 0x1.ff1ef9cab965ep+2,
	0x1.01de978eb73ffp+3, 0x1.0433096d11e25p+3, 0x1.068cdedabc2f6p+3, 0x1.08ec244e98124p+3,
	0x1.0b50e65c5be18p+3, 0x1.0dbb31b4d50e2p+3, 0x1.102b13262b6c3p+3, 0x1.12a0979c2517ap+3,
	0x1.151bcc206af5cp+3, 0x1.179cbddacdd52p+3, 0x1.1a237a118c2e0p+3, 0x1.1cb00e299882ep+3,
	0x1.1f4287a6e0653p+3, 0x1.21daf42c941d4p+3, 0x1.2479617d6ef87p+3, 0x1.271ddd7c003e7p+3,
	0x1.29c8762af4cf5p+3, 0x1.2c7939ad616bdp+3, 0x1.2f3036470da98p+3, 0x1.31ed7a5cbf944p+3,
	0x1.34b1147487feap+3, 0x1.377b13360f82ep+3, 0x1.3a4b856ae435fp+3, 0x1.3d2279fec80e5p+3,
}

// pow10Int[k] is 10^k.
var pow10Int = [6]float64{1, 10, 100, 1000, 10000, 100000}

// ln10 is ln(10), correctly rounded.
const ln10 = 0x1.26bb1bbb55516p+1

// pow10Frac returns 10^x for x in [0, 6): 10^(i/256) for the multiple of
// 1/256 below x, times e^y, y = (x - i/256) ln 10 < 0.009, by its Taylor
// polynomial of degree 6 (truncation error below 1e-18 relative),
// evaluated in Estrin's form for a short dependency chain. It is within a
// few ulps of the exact value, as math.Pow.
func pow10Frac(x float64) float64 {
	i := int(float64(x * 256))
	y := float64(float64(x-float64(float64(i)/256)) * ln10)
	y2 := float64(y * y)
	y4 := float64(y2 * y2)
	a := float64(1.0/2 + float64(y*(1.0/6)))
	b := float64(float64(1.0/24+float64(y*(1.0/120))) + float64(y2*(1.0/720)))
	e := float64(float64(1+y) + float64(float64(y2*a)+float64(y4*b)))
	return float64(float64(pow10Int[i>>8]*pow10Frac256[i&255]) * e)
}

// nextPrice is a log-uniform price in cents, 100 .. 1e8: Java's
// Math.round(Math.pow(10, u*6) * 100) with 10^x from pow10Frac. It differs
// from math.Pow's rounding only for values within a few ulps of a half
// cent (about 1 price in a million).
func (g *Generator) nextPrice() int64 {
	return int64(math.Floor(float64(pow10Frac(float64(g.rnd.nextDouble()*6.0))*100.0) + 0.5))
}
