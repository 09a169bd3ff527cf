/**
 * Short-lived cache of recall results keyed by the exact request, so an agent's tool loop
 * repeating the same recall inside one turn is served locally. In-flight lookups are shared;
 * a failed lookup is evicted so the next call tries the server again.
 */
export class RecallCache<V> {
	private readonly entries = new Map<string, { expiresAt: number; value: Promise<V> }>();

	constructor(
		private readonly ttlMs: number,
		private readonly now: () => number = Date.now,
	) {}

	/** Return the cached value for `key`, or run `load` and cache its result. */
	async fetch(key: string, load: () => Promise<V>): Promise<V> {
		if (this.ttlMs <= 0) return load();
		const hit = this.entries.get(key);
		if (hit && hit.expiresAt > this.now()) return hit.value;
		const value = load();
		const entry = { expiresAt: this.now() + this.ttlMs, value };
		this.entries.set(key, entry);
		value.catch(() => {
			if (this.entries.get(key) === entry) this.entries.delete(key);
		});
		return value;
	}

	clear(): void {
		this.entries.clear();
	}
}
