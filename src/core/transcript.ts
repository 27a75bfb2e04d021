/**
 * The provider-neutral transcript. Model adapters translate it to their vendor's format and back;
 * the run log stores it. Tool results follow the assistant message that made the calls, one
 * message per call, in order.
 */
export type ToolCall = { id: string; name: string; input: unknown };

/** The picture formats every supported model reads. */
export const imageMediaTypes = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export type ImageMediaType = (typeof imageMediaTypes)[number];

/**
 * A picture given to the model: a screenshot a person pasted, or one a tool took. Already checked
 * and scaled down where it came in; `data` is its bytes in base64.
 */
export type ModelImage = {
  mediaType: ImageMediaType;
  data: string;
  /** What to call it in a note to a model that cannot see it (a file name, "screenshot of /"). */
  name: string;
  width?: number | undefined;
  height?: number | undefined;
};

export type ModelMessage =
  | { role: 'user'; content: string; images?: ModelImage[] | undefined }
  | {
      role: 'assistant';
      content?: string | undefined;
      toolCalls?: ToolCall[];
      /**
       * Opaque data the provider needs back on the next turn (for example OpenAI reasoning items).
       * Only the provider that wrote it reads it; others ignore it.
       */
      providerState?: unknown;
    }
  | {
      role: 'tool';
      toolCallId: string;
      name: string;
      content: string;
      isError: boolean;
      images?: ModelImage[] | undefined;
    };

export type Usage = {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's prompt cache. */
  cacheReadTokens: number;
  /** Input tokens written to the provider's prompt cache. */
  cacheWriteTokens: number;
};

export const zeroUsage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
