/**
 * Remembers the most recent (input, output) pairs written by one memory instance, so the
 * same turn is never persisted twice — including A → B → A loops, not just repeats.
 */
export class TurnLedger {
	private readonly keys = new Set<string>();

	constructor(private readonly capacity = 64) {}

	/** Claim a pair for writing. False when it was already written (or is being written). */
	claim(input: string, output: string): boolean {
		const key = JSON.stringify([input, output]);
		if (this.keys.has(key)) {
			this.keys.delete(key);
			this.keys.add(key);
			return false;
		}
		this.keys.add(key);
		if (this.keys.size > this.capacity) {
			const oldest = this.keys.values().next().value as string;
			this.keys.delete(oldest);
		}
		return true;
	}

	/** Give a claim back after a failed write, so a later identical turn may retry. */
	release(input: string, output: string): void {
		this.keys.delete(JSON.stringify([input, output]));
	}
}
