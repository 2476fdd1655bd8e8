/** One Server-Sent Events message: its event name ("message" when none was sent), its data lines joined, and the last id sent so far. */
export interface SseMessage {
  event: string;
  data: string;
  /** The stream's last event id when the message was dispatched (the id field persists across messages). */
  lastEventId: string;
}

/**
 * The text/event-stream format, read as it arrives: chunks in, whole messages out. Lines end with
 * CRLF, LF or CR (a CR at the end of a chunk may be the first half of a CRLF); a line starting
 * with ":" is a comment (the service's keep-alive); a blank line dispatches the message.
 */
export class SseParser {
  #pending = '';
  #data: string[] = [];
  #event = '';
  #lastEventId = '';
  #afterCr = false;

  /** The messages completed by this chunk of text. */
  push(chunk: string): SseMessage[] {
    let text = chunk;
    // A CR ended the previous chunk: a LF opening this one belongs to it.
    if (this.#afterCr && text.startsWith('\n')) text = text.slice(1);
    this.#afterCr = false;
    const messages: SseMessage[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.#pending + text.slice(start, i);
      this.#pending = '';
      if (c === 13) {
        if (i + 1 === text.length) this.#afterCr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
      const message = this.#line(line);
      if (message) messages.push(message);
    }
    this.#pending += text.slice(start);
    return messages;
  }

  #line(line: string): SseMessage | undefined {
    if (line === '') return this.#dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    // An id holding NUL is ignored, as browsers do.
    else if (field === 'id' && !value.includes('\0')) this.#lastEventId = value;
    return undefined;
  }

  #dispatch(): SseMessage | undefined {
    const event = this.#event || 'message';
    this.#event = '';
    if (this.#data.length === 0) return undefined;
    const data = this.#data.join('\n');
    this.#data = [];
    return { event, data, lastEventId: this.#lastEventId };
  }
}
