package state

// pyIntSetOrder is the order in which CPython 3.11 iterates set(ints) for
// non-negative ints (whose hash is themselves, so the order is the same in
// every upstream process): upstream words some errors from such sets.
// It follows setobject.c: an 8-slot table, perturbed probing, growth to
// four times the entries when three fifths are filled, reinsertion in
// table order.
func pyIntSetOrder(ints []int) []int {
	const linearProbes, perturbShift = 9, 5
	table := make([]int, 8)
	used := make([]bool, 8)
	fill := 0
	// insert places v in a table known not to hold it.
	insert := func(table []int, used []bool, v int) {
		mask := uint(len(table) - 1)
		perturb := uint(v)
		i := uint(v) & mask
		for {
			if !used[i] {
				table[i], used[i] = v, true
				return
			}
			if i+linearProbes <= mask {
				for j := uint(1); j <= linearProbes; j++ {
					if !used[i+j] {
						table[i+j], used[i+j] = v, true
						return
					}
				}
			}
			perturb >>= perturbShift
			i = (i*5 + 1 + perturb) & mask
		}
	}
	contains := func(v int) bool {
		for i, u := range used {
			if u && table[i] == v {
				return true
			}
		}
		return false
	}
	for _, v := range ints {
		if contains(v) {
			continue
		}
		insert(table, used, v)
		fill++
		if mask := len(table) - 1; fill*5 >= mask*3 {
			size := 8
			for size <= fill*4 {
				size <<= 1
			}
			nt, nu := make([]int, size), make([]bool, size)
			for i, u := range used {
				if u {
					insert(nt, nu, table[i])
				}
			}
			table, used = nt, nu
		}
	}
	var out []int
	for i, u := range used {
		if u {
			out = append(out, table[i])
		}
	}
	return out
}
