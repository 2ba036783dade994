package resp

import (
	"math"
	"sync"

	lua "github.com/yuin/gopher-lua"
)

// Scripts' math.random and math.randomseed are Redis's: its 48-bit linear
// congruential generator (rand.c, drand48's constants), so that a script
// seeding it draws the same numbers as on Redis. One generator serves
// every script of the node, as Redis's one Lua state does: unseeded, a
// script continues the sequence the scripts before it left.

const (
	lcgMultiplier = 0x5DEECE66D
	lcgIncrement  = 0xB
	lcgMask       = 1<<48 - 1
	lrand48Max    = math.MaxInt32 // Redis's REDIS_LRAND48_MAX
)

// scriptPRNG is the node's generator.
type scriptPRNG struct {
	mu sync.Mutex
	x  uint64 // 48 bits of state
}

// newScriptPRNG starts where rand.c's static state starts.
func newScriptPRNG() *scriptPRNG { return &scriptPRNG{x: 0x1234ABCD330E} }

// seed is redisSrand48: the seed's 32 bits above rand.c's fixed 0x330E.
func (p *scriptPRNG) seed(v int32) {
	p.mu.Lock()
	p.x = uint64(uint32(v))<<16 | 0x330E
	p.mu.Unlock()
}

// lrand48 is redisLrand48: the next state's top 31 bits.
func (p *scriptPRNG) lrand48() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.x = (lcgMultiplier*p.x + lcgIncrement) & lcgMask
	return int32(p.x >> 17)
}

// luaCheckInt is Lua 5.1's luaL_checkint: a lua_Integer (64 bits, as C
// converts a double) cast to a C int.
func luaCheckInt(L *lua.LState, i int) int32 { return int32(lua51CheckInteger(L, i)) }

// installRedisRandom replaces math.random and math.randomseed in the math
// table with Redis's.
func installRedisRandom(L *lua.LState, mathLib *lua.LTable, p *scriptPRNG) {
	mathLib.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		r := float64(p.lrand48()%lrand48Max) / lrand48Max
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(r))
		case 1:
			u := luaCheckInt(L, 1)
			if u < 1 {
				lua51ArgError(L, 1, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
		case 2:
			l, u := luaCheckInt(L, 1), luaCheckInt(L, 2)
			if l > u {
				lua51ArgError(L, 2, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(r*(float64(u)-float64(l)+1)) + float64(l)))
		default:
			lua51Error(L, "wrong number of arguments")
		}
		return 1
	}))
	mathLib.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		p.seed(luaCheckInt(L, 1))
		return 0
	}))
}
